"""`manage.py balance_proposal --goal GOAL [--brokers 2,3] [--topic T --replication-factor N] [--output F]`:
a balance proposal (`controller.proposals`): each move with its bytes, the per-broker before/after, and with
`--output` Kafka's reassignment JSON to run with `reassign_partitions --execute`. Changes nothing."""

from django.core.management.base import BaseCommand, CommandError

from controlplane.controller import plans, proposals
from controlplane.core.errors import KafkaApiError


class Command(BaseCommand):
    help = "Propose a reassignment plan for a balance goal (changes nothing)."

    def add_arguments(self, parser):
        parser.add_argument("--goal", required=True, choices=proposals.GOALS)
        parser.add_argument("--brokers", default="", metavar="2,3", help="brokers to decommission")
        parser.add_argument("--topic")
        parser.add_argument("--replication-factor", type=int)
        parser.add_argument("--output", metavar="F", help="write the plan as Kafka's reassignment JSON")

    def handle(self, *args, goal, brokers, topic, replication_factor, output, **options):
        try:
            broker_ids = [int(b) for b in brokers.split(",") if b.strip()]
        except ValueError:
            raise CommandError(f"--brokers must be broker ids separated by commas: {brokers}") from None
        try:
            proposal = proposals.propose(goal, broker_ids, topic, replication_factor)
        except KafkaApiError as e:
            raise CommandError(f"{e.error}: {e.message}") from None
        for old, new in proposal.moves:
            self.stdout.write(f"{new.topic}-{new.partition}: {list(old.replicas)} -> {list(new.replicas)} "
                              f"({new.size * len(set(new.replicas) - set(old.replicas))} bytes)")
        self.stdout.write(f"{len(proposal.moves)} partitions, {proposal.replica_moves} replicas, "
                          f"{proposal.bytes_to_move} bytes to move")
        self.stdout.write("broker  replicas  leaders  bytes (before -> after)")
        for b in sorted(set(proposal.before) | set(proposal.after)):
            was, now = proposal.before.get(b), proposal.after.get(b)
            self.stdout.write(f"{b:>6}  {was.replicas if was else 0:>4} -> {now.replicas if now else 0:<4} "
                              f"{was.leaders if was else 0:>4} -> {now.leaders if now else 0:<4} "
                              f"{was.bytes if was else 0} -> {now.bytes if now else 0}")
        if output:
            if not proposal.moves:
                raise CommandError("Nothing to move: no plan written")
            with open(output, "w", encoding="utf-8") as f:
                f.write(plans.format_plan(proposals.plan_entries(proposal)) + "\n")
            self.stdout.write(f"Plan written to {output}: manage.py reassign_partitions --execute "
                              f"--reassignment-json-file {output} [--throttle BYTES_PER_S]")
