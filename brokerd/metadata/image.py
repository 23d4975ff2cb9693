"""Immutable metadata snapshots. A new `ClusterImage` replaces the old one on every change.

Invariant: partition indexes of a topic are exactly 0..len(partitions)-1, in order.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: str
    partitions: tuple[PartitionAssignment, ...]
    configs: Mapping[str, str] = field(default_factory=dict)
    """Per-topic overrides only (raw strings, already validated); defaults come from kafkaspec."""


@dataclass(frozen=True, slots=True)
class ClusterImage:
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerEndpoint, ...]
    topics: Mapping[str, TopicMetadata]

    def broker(self, node_id: int) -> BrokerEndpoint | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A CreateTopics entry after decoding: -1 means "broker default" for both counts."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: Mapping[str, str]
    assignments: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
