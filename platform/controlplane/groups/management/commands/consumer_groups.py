"""`manage.py consumer_groups`: Kafka's kafka-consumer-groups.sh against this cluster.

    consumer_groups --list [--state]
    consumer_groups --describe --group G
    consumer_groups --reset-offsets --group G (--all-topics | --topic T[:P,P] …)
        (--to-earliest | --to-latest | --to-datetime X | --by-duration X | --shift-by N | --to-offset N)
        [--dry-run | --execute]
    consumer_groups --delete --group G

`--bootstrap-server` overrides where to connect (default: STROM_BOOTSTRAP_SERVERS, else the running brokers).
Resets (also dry runs) and deletions are checked for, and recorded as, the `--as` user (default: the local
superuser).
"""

from django.core.management.base import CommandError

from controlplane.access import actions
from controlplane.access.commands import ActorCommand
from controlplane.core.errors import KafkaApiError
from controlplane.groups import kafka_client
from controlplane.groups.reset import ResetKind, ResetSpec, Scope, parse_spec, parse_topic_arguments
from controlplane.groups.services import INACTIVE_STATES, GroupService, ResetPlan

_RESET_ONLY = ("all_topics", "topic", "dry_run", "execute", *(k.value.replace("-", "_") for k in ResetKind))


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def table(headers: tuple[str, ...], rows: list[tuple]) -> str:
    """Kafka's tool layout: left-aligned columns as wide as their widest cell, one space apart."""
    cells = [headers, *[tuple(map(_cell, row)) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(" ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)


class Command(ActorCommand):
    help = "List, describe, reset the offsets of, and delete consumer groups (like kafka-consumer-groups.sh)."

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--list", action="store_true", help="List all consumer groups.")
        action.add_argument("--describe", action="store_true", help="Describe a group: offsets and lag.")
        action.add_argument("--reset-offsets", action="store_true", help="Reset a group's offsets.")
        action.add_argument("--delete", action="store_true", help="Delete an inactive group.")
        parser.add_argument("--group", help="The consumer group id.")
        parser.add_argument("--state", action="store_true", help="With --list: show state, protocol and members.")
        parser.add_argument("--bootstrap-server", help="host:port[,host:port…] to connect to.")
        parser.add_argument("--all-topics", action="store_true", help="Reset every partition the group has "
                                                                      "committed offsets for.")
        parser.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]",
                            help="Reset this topic (or these partitions of it); may be repeated.")
        spec = parser.add_mutually_exclusive_group()
        spec.add_argument("--to-earliest", action="store_true", help="Reset to the log start offset.")
        spec.add_argument("--to-latest", action="store_true", help="Reset to the log end offset.")
        spec.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                          help="Reset to the first offset at or after this time (UTC unless a zone is given).")
        spec.add_argument("--by-duration", metavar="PnDTnHnMnS",
                          help="Reset to the first offset at or after now minus this ISO-8601 duration.")
        spec.add_argument("--shift-by", metavar="N", help="Move the committed offsets by N (may be negative).")
        spec.add_argument("--to-offset", metavar="N", help="Reset to offset N.")
        run = parser.add_mutually_exclusive_group()
        run.add_argument("--dry-run", action="store_true", help="Only show the plan (the default).")
        run.add_argument("--execute", action="store_true", help="Commit the new offsets.")

    def handle(self, *args, **options):
        if not options["reset_offsets"] and (used := [o for o in _RESET_ONLY if options[o]]):
            raise CommandError(f"--{used[0].replace('_', '-')} is only valid with --reset-offsets")
        if options["state"] and not options["list"]:
            raise CommandError("--state is only valid with --list")
        if not options["list"] and not options["group"]:
            raise CommandError("This action needs --group")
        try:
            reset = self._reset_request(options) if options["reset_offsets"] else None  # checked before connecting
            admin = kafka_client.KafkaGroupAdmin(options["bootstrap_server"]) if options["bootstrap_server"] \
                else kafka_client.connect()
            service = GroupService(admin)
            if options["list"]:
                self._list(service, options["state"])
            elif options["describe"]:
                self._describe(service, options["group"])
            elif reset:
                self._write_plan(self._reset(service, options["group"], reset, options["execute"]))
            else:
                with self.audited(actions.DELETE_CONSUMER_GROUP, f"group:{options['group']}") as change:
                    change.before = {"offsets": service.delete_group(options["group"])}
                self.stdout.write(f"Deletion of requested consumer groups ('{options['group']}') was successful.")
        except KafkaApiError as e:
            raise CommandError(f"{e.error}: {e.message}") from None

    def _reset(self, service: GroupService, group_id: str, reset: tuple[Scope, ResetSpec], execute: bool
               ) -> ResetPlan:
        target = f"group:{group_id}"
        if not execute:
            self.authorize(actions.RESET_OFFSETS, target)
            return service.reset_offsets(group_id, *reset, execute=False)
        with self.audited(actions.RESET_OFFSETS, target) as change:
            plan = service.reset_offsets(group_id, *reset, execute=True)
            change.before, change.after = plan.audit_states()
        return plan

    def _list(self, service: GroupService, with_state: bool) -> None:
        groups = service.list_groups()
        if with_state:
            self.stdout.write(table(("GROUP", "STATE", "PROTOCOL-TYPE", "MEMBERS"),
                                    [(g.group_id, g.state, g.protocol_type, g.members) for g in groups]))
        else:
            for group in groups:
                self.stdout.write(group.group_id)

    def _describe(self, service: GroupService, group_id: str) -> None:
        detail = service.describe_group(group_id)
        if not detail.is_active:
            self.stdout.write(f"\nConsumer group '{group_id}' has no active members.")
        headers = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                   "CLIENT-ID")
        self.stdout.write("\n" + table(headers, [(group_id, p.topic, p.partition, p.current_offset,
                                                  p.log_end_offset, p.lag, p.consumer_id, p.host, p.client_id)
                                                 for p in detail.partitions]))

    def _reset_request(self, options: dict) -> tuple[Scope, ResetSpec]:
        if options["all_topics"] and options["topic"]:
            raise CommandError("--all-topics and --topic cannot be used together")
        if not options["all_topics"] and not options["topic"]:
            raise CommandError("--reset-offsets needs --all-topics or --topic")
        given = {k: options[k.value.replace("-", "_")] for k in ResetKind}  # True, a string, or False/None
        chosen = [(kind, value) for kind, value in given.items() if value not in (None, False)]
        if not chosen:
            raise CommandError("--reset-offsets needs one of " + ", ".join(f"--{k}" for k in ResetKind))
        kind, value = chosen[0]
        spec = parse_spec(kind, None if value is True else value)
        scope = Scope(all_topics=True) if options["all_topics"] else parse_topic_arguments(options["topic"])
        if not options["dry_run"] and not options["execute"]:
            self.stderr.write("WARN: No action will be performed as the --execute option is missing. "
                              "Add --dry-run to say so explicitly.")
        return scope, spec

    def _write_plan(self, plan: ResetPlan) -> None:
        for warning in plan.warnings:
            self.stderr.write(f"Warn: {warning}")
        if not plan.executed and plan.state not in INACTIVE_STATES:
            self.stderr.write(f"Note: group '{plan.group_id}' is {plan.state}; --execute is refused until it is "
                              "inactive.")
        headers = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-END-OFFSET", "LAG-AFTER")
        self.stdout.write("\n" + table(headers, [(plan.group_id, r.topic, r.partition, r.current_offset, r.new_offset,
                                                  r.log_end_offset, r.lag_after) for r in plan.rows]))
