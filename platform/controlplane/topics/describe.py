"""One topic in detail, as `kafka-topics --describe` and `kafka-configs --describe --all` show it: its partitions
with the leaders' latest log offsets and each replica's size (metrics rollups), and every topic config with its
value, source, type, default and documentation (`kafkaspec.topic_config`). Reads the database only: a few queries
per topic."""

from dataclasses import dataclass

from controlplane.metrics.models import PartitionReplicaSize
from kafkaspec import topic_config

from .models import Partition, Topic

__all__ = ("ConfigEntry", "PartitionRow", "config_entries", "partition_rows")

TOPIC_OVERRIDE = "topic"
"""Sources of a config's value: the topic's own override (Kafka's DYNAMIC_TOPIC_CONFIG), else Kafka's default
(DEFAULT_CONFIG). Broker-level defaults (`log.*` in a broker's server.properties) live in each broker's own file and
are not known to the control plane; DescribeConfigs on a broker shows them."""
DEFAULT = "default"


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str
    source: str
    type: str
    default: str
    doc: str
    broker_key: str | None


@dataclass(frozen=True)
class PartitionRow:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int
    offline: bool
    under_replicated: bool
    log_start_offset: int | None
    log_end_offset: int | None
    """As the leader last reported them (null before its first metrics round)."""
    replica_sizes: list[int | None]
    """Bytes of each replica, in `replicas` order, as its broker last reported (null: not yet)."""


def config_entries(topic: Topic) -> list[ConfigEntry]:
    """Every topic config, sorted by name; overridden values as stored (Kafka's strings)."""
    entries = []
    for name, definition in sorted(topic_config.TOPIC_CONFIGS.items()):
        default = definition.render(definition.default)
        overridden = name in topic.configs
        entries.append(ConfigEntry(name, topic.configs[name] if overridden else default,
                                   TOPIC_OVERRIDE if overridden else DEFAULT, definition.type.value, default,
                                   definition.doc, definition.broker_key))
    return entries


def partition_rows(topic: Topic) -> list[PartitionRow]:
    reported = {(r.partition, r.broker_id): r for r in PartitionReplicaSize.objects.filter(topic=topic.name)}
    rows = []
    for p in Partition.objects.filter(topic=topic).order_by("partition"):
        leader = reported.get((p.partition, p.leader))
        rows.append(PartitionRow(p.partition, p.leader, p.replicas, p.isr, p.leader_epoch, p.is_offline,
                                 p.is_under_replicated, leader and leader.log_start_offset,
                                 leader and leader.log_end_offset,
                                 [reported[(p.partition, b)].size_bytes if (p.partition, b) in reported else None
                                  for b in p.replicas]))
    return rows
