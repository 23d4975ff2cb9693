"""`manage.py elect_leaders [--election-type preferred|unclean] [--topic T [--partition P]] [--as USER]`: Kafka's
kafka-leader-election.sh against the metadata store (default: preferred election for every partition). Checked
for, and recorded as, the `--as` user (unclean elections need the admin role)."""

from django.core.management.base import CommandError

from controlplane.access.commands import ActorCommand
from controlplane.controller import election
from controlplane.core.errors import KafkaApiError


class Command(ActorCommand):
    help = "Elect preferred (or, with --election-type unclean, any live) leaders."

    def add_arguments(self, parser):
        parser.add_argument("--election-type", choices=(election.PREFERRED, election.UNCLEAN),
                            default=election.PREFERRED)
        parser.add_argument("--topic")
        parser.add_argument("--partition", type=int)

    def handle(self, *args, election_type: str, topic: str | None, partition: int | None, **options):
        if partition is not None and topic is None:
            raise CommandError("--partition needs --topic")
        targets = None
        if topic is not None:
            targets = [(topic, partition)] if partition is not None else election.topic_targets(topic)
        try:
            with self.audited(election.election_action(election_type), election.audit_target(targets)) as change:
                results = election.elect_leaders(election_type, targets)
                change.before, change.after = election.audit_states(results)
        except KafkaApiError as e:
            raise CommandError(f"{e.error}: {e.message}") from None
        for r in results:
            outcome = "elected" if r.error is None else r.error
            self.stdout.write(f"{r.topic}-{r.partition}: {outcome}")
        if not results:
            self.stdout.write("No partition needed an election.")
