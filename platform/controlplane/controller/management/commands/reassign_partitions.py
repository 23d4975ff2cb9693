"""`manage.py reassign_partitions`: Kafka's kafka-reassign-partitions.sh with its flags and JSON formats, against
the metadata store (/work/shared/reference/reassignment.md §1):

    --generate --topics-to-move-json-file F --broker-list 1,2,3 [--disable-rack-aware]
    --execute --reassignment-json-file F [--throttle BYTES_PER_S] [--additional]
    --verify --reassignment-json-file F [--preserve-throttles]     (clears throttles once nothing reassigns)
    --cancel --reassignment-json-file F [--preserve-throttles]
    --list

Changes are checked for, and recorded as, the `--as` user (operator role). A bad input or any partition that
fails exits non-zero with one line per problem."""

from django.core.management.base import CommandError

from controlplane.access import actions
from controlplane.access.commands import ActorCommand
from controlplane.controller import plans, reassignment, throttles
from controlplane.core.errors import KafkaApiError

MODES = ("generate", "execute", "verify", "cancel", "list")


class Command(ActorCommand):
    help = "Generate, execute, verify, cancel or list partition reassignments (Kafka's tool)."

    def add_arguments(self, parser):
        modes = parser.add_mutually_exclusive_group(required=True)
        for mode in MODES:
            modes.add_argument(f"--{mode}", action="store_true")
        parser.add_argument("--reassignment-json-file", metavar="F")
        parser.add_argument("--topics-to-move-json-file", metavar="F")
        parser.add_argument("--broker-list", metavar="1,2,3")
        parser.add_argument("--disable-rack-aware", action="store_true")
        parser.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_S",
                            help="Replication throttle for the moves, in B/s (-1: none).")
        parser.add_argument("--additional", action="store_true",
                            help="Execute while other reassignments run (also how to change the throttle).")
        parser.add_argument("--preserve-throttles", action="store_true")

    def handle(self, *args, **options):
        mode = next(m for m in MODES if options[m])
        try:
            getattr(self, f"_{mode}")(options)
        except KafkaApiError as e:
            raise CommandError(f"{e.error}: {e.message}") from None

    def _read(self, options, flag: str) -> str:
        path = options[flag.replace("-", "_")]
        if not path:
            raise CommandError(f"--{flag} is required with this mode")
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise CommandError(f"Cannot read --{flag} {path}: {e.strerror}") from None

    def _plan(self, options) -> list[plans.PlanEntry]:
        return plans.parse_plan(self._read(options, "reassignment-json-file"))

    def _generate(self, options):
        topics = plans.parse_topics_to_move(self._read(options, "topics-to-move-json-file"))
        try:
            brokers = [int(b) for b in (options["broker_list"] or "").split(",") if b.strip()]
        except ValueError:
            raise CommandError(f"--broker-list must be broker ids separated by commas: {options['broker_list']}") \
                from None
        if not brokers:
            raise CommandError("--generate needs --broker-list")
        current, proposed = plans.generate(topics, brokers, not options["disable_rack_aware"])
        self.stdout.write(f"Current partition replica assignment\n{plans.format_plan(current)}\n")
        self.stdout.write(f"Proposed partition reassignment configuration\n{plans.format_plan(proposed)}")

    def _execute(self, options):
        entries = self._plan(options)
        keys = [(e.topic, e.partition) for e in entries]
        with self.audited(actions.START_REASSIGNMENT, reassignment.audit_target(
                [(t, n, None) for t, n in keys])) as change:
            current = plans.current_assignment(keys)
            self.stdout.write("Current partition replica assignment\n\n" + plans.format_plan(current) + "\n\n"
                              "Save this to use as the --reassignment-json-file option during rollback")
            results = plans.execute(entries, options["throttle"], options["additional"])
            change.before, change.after = plans.execute_audit_states(current, entries, options["throttle"], results)
        if options["throttle"] >= 0:
            self.stdout.write(f"Warning: You must run --verify periodically, until the reassignment completes, to "
                              f"ensure the throttle is removed.\nThe inter-broker throttle limit was set to "
                              f"{options['throttle']} B/s")
        self._report(results, "Successfully started partition reassignment", "reassigning")

    def _report(self, results, success: str, verb: str):
        failed = [r for r in results if r.error]
        if not results:
            self.stdout.write("None of the plan's partitions is being reassigned.")
        elif not failed:
            self.stdout.write(f"{success}{'s' if len(results) != 1 else ''} for "
                              + ",".join(f"{r.topic}-{r.partition}" for r in results))
            return
        raise CommandError(f"Error {verb} partition(s):\n" + "\n".join(
            f"{r.topic}-{r.partition}: {r.error}: {r.message}" for r in failed))

    def _verify(self, options):
        entries = self._plan(options)
        states, idle = plans.verify(entries)
        self.stdout.write("Status of partition reassignment:")
        for s, entry in zip(states, entries, strict=True):
            where = f"{s.topic}-{s.partition}"
            self.stdout.write({
                "in progress": f"Reassignment of partition {where} is still in progress.",
                "completed": f"Reassignment of partition {where} is completed.",
            }.get(s.state, f"There is no active reassignment of partition {where}, but replica set is "
                           f"{list(s.actual)} rather than {list(entry.replicas)}."))
        if idle and not options["preserve_throttles"]:
            self._clear_throttles({e.topic for e in entries})

    def _clear_throttles(self, topics: set[str]):
        with self.audited(actions.CLEAR_REASSIGNMENT_THROTTLES, "topics:" + ",".join(sorted(topics))) as change:
            cleared_topics, brokers = throttles.clear_throttles(topics)
            change.after = {"topics": cleared_topics, "brokers": brokers}
        if brokers:
            self.stdout.write(f"Clearing broker-level throttles on brokers {','.join(map(str, brokers))}")
        for topic in cleared_topics:
            self.stdout.write(f"Clearing topic-level throttles on topic {topic}")

    def _cancel(self, options):
        entries = self._plan(options)
        keys = [(e.topic, e.partition, None) for e in entries]
        with self.audited(actions.CANCEL_REASSIGNMENT, reassignment.audit_target(keys)) as change:
            change.before = {"reassigning": reassignment.list_reassignments([(t, n) for t, n, _ in keys])}
            results = plans.cancel(entries)
            change.after = {"cancelled": [f"{r.topic}-{r.partition}" for r in results if not r.error]}
        self._report(results, "Successfully cancelled partition reassignment", "cancelling")
        if not options["preserve_throttles"]:
            self._clear_throttles({e.topic for e in entries})

    def _list(self, options):
        found = reassignment.list_reassignments()
        if not found:
            self.stdout.write("No partition reassignments found.")
            return
        self.stdout.write("Current partition reassignments:")
        for r in found:
            self.stdout.write(f"{r['topic']}-{r['partition']}: replicas: {','.join(map(str, r['replicas']))}. "
                              f"adding: {','.join(map(str, r['adding_replicas']))}. "
                              f"removing: {','.join(map(str, r['removing_replicas']))}.")
