"""`manage.py topics`: Kafka's kafka-topics.sh against the metadata store, with the same output.

    topics --list [--exclude-internal]
    topics --describe [--topic T] [--under-replicated-partitions | --unavailable-partitions] [--exclude-internal]
    topics --create --topic T [--partitions N] [--replication-factor R] [--config k=v …] [--if-not-exists]
    topics --alter --topic T --partitions N
    topics --delete --topic T [--if-exists]

Changes are checked for, and recorded as, the `--as` user (default: the local superuser). Errors end the command
with a non-zero exit and one line: the Kafka error name and its message.
"""

import base64
import uuid

from django.core.management.base import CommandError

from controlplane.access import actions
from controlplane.access.commands import ActorCommand
from controlplane.core.errors import KafkaApiError
from controlplane.topics import services
from controlplane.topics.models import Partition, Topic
from kafkaspec import topic_names

__all__ = ("Command", "describe_lines", "kafka_uuid", "parse_config_pairs")


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's `Uuid.toString()`: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_config_pairs(pairs: list[str]) -> dict[str, str]:
    """`--config k=v` (repeatable; Kafka also accepts several pairs separated by commas in one)."""
    configs = {}
    for pair in (p for arg in pairs for p in arg.split(",") if p):
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise KafkaApiError("INVALID_CONFIG", f"Invalid config {pair!r}: expected name=value")
        configs[name.strip()] = value.strip()
    return configs


def _partition_line(topic: Topic, p: Partition) -> str:
    leader = "none" if p.is_offline else str(p.leader)
    return (f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}")


def describe_lines(topic: Topic, partitions: list[Partition], only: str | None = None) -> list[str]:
    """kafka-topics --describe for one topic: its header line, then a line per partition. With `only`
    ("under-replicated" or "unavailable") just the matching partitions, without the header, as Kafka does."""
    if only == "under-replicated":
        return [_partition_line(topic, p) for p in partitions if not p.is_offline and p.is_under_replicated]
    if only == "unavailable":
        return [_partition_line(topic, p) for p in partitions if p.is_offline]
    replication_factor = max((len(p.replicas) for p in partitions), default=0)
    configs = ",".join(f"{k}={v}" for k, v in sorted(topic.configs.items()))
    header = (f"Topic: {topic.name}\tTopicId: {kafka_uuid(topic.topic_id)}\tPartitionCount: {len(partitions)}\t"
              f"ReplicationFactor: {replication_factor}\tConfigs: {configs}")
    return [header, *(_partition_line(topic, p) for p in partitions)]


class Command(ActorCommand):
    help = "Create, delete, describe, or change a topic (like kafka-topics.sh)."

    def add_arguments(self, parser):
        verb = parser.add_mutually_exclusive_group(required=True)
        verb.add_argument("--list", action="store_true", help="List all available topics.")
        verb.add_argument("--describe", action="store_true", help="List details for the given topics.")
        verb.add_argument("--create", action="store_true", help="Create a new topic.")
        verb.add_argument("--alter", action="store_true", help="Alter the number of partitions of a topic.")
        verb.add_argument("--delete", action="store_true", help="Delete a topic.")
        parser.add_argument("--topic", help="The topic to create, alter, describe or delete.")
        parser.add_argument("--partitions", type=int, help="The number of partitions (create: default "
                                                            "num.partitions; alter: the new total).")
        parser.add_argument("--replication-factor", type=int, help="The replication factor (create only; default "
                                                                    "min(3, running brokers)).")
        parser.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                            help="A topic config override (create only); may be repeated.")
        parser.add_argument("--under-replicated-partitions", action="store_true",
                            help="With --describe: only partitions whose ISR lacks a replica.")
        parser.add_argument("--unavailable-partitions", action="store_true",
                            help="With --describe: only partitions without a leader.")
        parser.add_argument("--exclude-internal", action="store_true", help="Leave out internal topics.")
        parser.add_argument("--if-not-exists", action="store_true", help="With --create: no error if it exists.")
        parser.add_argument("--if-exists", action="store_true", help="With --alter/--delete: no error if missing.")

    def handle(self, *args, **options):
        topic = options["topic"]
        if (options["create"] or options["alter"] or options["delete"]) and not topic:
            raise CommandError("Missing required argument \"[topic]\"")
        if options["alter"] and options["partitions"] is None:
            raise CommandError("--alter needs --partitions (configs are changed with `manage.py configs`)")
        try:
            if options["list"]:
                for name in self._topics(options).values_list("name", flat=True):
                    self.stdout.write(name)
            elif options["describe"]:
                self._describe(options)
            elif options["create"]:
                self._create(topic, options)
            elif options["alter"]:
                if self._missing(topic, options["if_exists"]):
                    return
                with self.audited(actions.CREATE_PARTITIONS, f"topic:{topic}") as change:
                    change.before = services.audit_state(topic)
                    services.create_partitions(topic, options["partitions"])
                    change.after = services.audit_state(topic)
            else:
                if self._missing(topic, options["if_exists"]):
                    return
                with self.audited(actions.DELETE_TOPICS, f"topic:{topic}") as change:
                    change.before = services.audit_state(topic)
                    services.delete_topic(topic)
        except KafkaApiError as e:
            raise CommandError(f"{e.error}: {e.message}") from None

    def _topics(self, options):
        queryset = Topic.objects.order_by("name")
        if options["topic"]:
            queryset = queryset.filter(name=options["topic"])
        if options["exclude_internal"]:
            queryset = queryset.exclude(name__in=topic_names.INTERNAL_TOPICS)
        return queryset

    def _describe(self, options) -> None:
        only = "under-replicated" if options["under_replicated_partitions"] else \
            "unavailable" if options["unavailable_partitions"] else None
        topics = self._topics(options)
        if options["topic"] and not topics.exists():
            raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic '{options['topic']}' does not exist as expected")
        by_topic: dict[int, list[Partition]] = {}
        for p in Partition.objects.filter(topic__in=topics).order_by("topic_id", "partition"):
            by_topic.setdefault(p.topic_id, []).append(p)
        for topic in topics:
            for line in describe_lines(topic, by_topic.get(topic.pk, []), only):
                self.stdout.write(line)

    def _create(self, topic: str, options) -> None:
        if options["if_not_exists"] and Topic.objects.filter(name=topic).exists():
            return
        configs = parse_config_pairs(options["config"])
        partitions = services.DEFAULT if options["partitions"] is None else options["partitions"]
        replication_factor = services.DEFAULT if options["replication_factor"] is None else \
            options["replication_factor"]
        with self.audited(actions.CREATE_TOPICS, f"topic:{topic}") as change:
            services.create_topic(topic, partitions, replication_factor, configs=configs)
            change.after = services.audit_state(topic)
        self.stdout.write(f"Created topic {topic}.")

    def _missing(self, topic: str, if_exists: bool) -> bool:
        """True when --if-exists and the topic does not exist (nothing to do)."""
        return if_exists and not Topic.objects.filter(name=topic).exists()
