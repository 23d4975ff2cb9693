"""Immutable metadata snapshots. A new `ClusterImage` replaces the old one on every change.

Invariant: partition indexes of a topic are exactly 0..len(partitions)-1, in order.
"""

import uuid
import weakref
from collections.abc import Collection, Mapping
from dataclasses import InitVar, dataclass, field

from brokerd.types import BrokerId, LeaderEpoch, PartitionEpoch

NO_TOPIC_ID = uuid.UUID(int=0)
"""Kafka's ZERO_UUID: no topic id (a validate-only answer, an unknown topic)."""


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: BrokerId
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False
    """Cluster mode: the controller fenced it (heartbeats stopped); clients are not sent there."""


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    partition: int
    leader_id: BrokerId
    leader_epoch: LeaderEpoch
    replicas: tuple[BrokerId, ...]
    isr: tuple[BrokerId, ...]
    partition_epoch: PartitionEpoch = PartitionEpoch(0)
    """Bumped by the control plane on every change of leader, ISR or replicas (KIP-841 fencing)."""


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: str
    partitions: tuple[PartitionAssignment, ...]
    configs: Mapping[str, str] = field(default_factory=dict)
    """Per-topic overrides only (raw strings, already validated); defaults come from kafkaspec."""
    uuid: "uuid.UUID" = field(init=False, repr=False, compare=False)
    """`topic_id` (the canonical UUID string the control plane and the standalone file keep) as a UUID, parsed
    once: every new image indexes its topics by it, and a delta keeps the unchanged topics' objects."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "uuid", uuid.UUID(self.topic_id) if self.topic_id else NO_TOPIC_ID)


@dataclass(frozen=True, slots=True)
class _Derivation:
    """How an image was made from another by a delta: that image (weakly: an image never keeps the ones before it
    alive) and the names of the topics whose entry is not that image's object (replaced, added or removed)."""

    base: "weakref.ref[ClusterImage]"
    topics: frozenset[str]


@dataclass(frozen=True, slots=True, weakref_slot=True)
class ClusterImage:
    cluster_id: str
    controller_id: BrokerId
    brokers: tuple[BrokerEndpoint, ...]
    topics: Mapping[str, TopicMetadata]
    metadata_version: int = 0
    """The control plane's version of this image (standalone: 0)."""
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Dynamic broker config overrides by broker id as a string, "default" for the cluster-wide default
    (the replication throttle rates; kafkaspec.replication_throttles)."""
    derived_from: InitVar[tuple["ClusterImage", Collection[str]] | None] = None
    """(base, changed): `topics` are `base.topics` but for the entries named in `changed` (replaced, added or
    removed; every other entry the same object). Makes this image's index by topic id from the base's in
    O(changed), and lets `changed_topics_since(base)` answer without comparing every topic."""
    _by_id: Mapping[uuid.UUID, TopicMetadata] = field(init=False, repr=False, compare=False)
    _derivation: _Derivation | None = field(init=False, repr=False, compare=False)

    def __post_init__(self, derived_from: tuple["ClusterImage", Collection[str]] | None) -> None:
        if derived_from is None:
            object.__setattr__(self, "_by_id", {t.uuid: t for t in self.topics.values()})
            object.__setattr__(self, "_derivation", None)
            return
        base, changed = derived_from
        by_id = dict(base._by_id)  # a copy of a flat dict: ~35 us at 10,000 topics, no per-entry work
        for name in changed:
            held = base.topics.get(name)
            if held is not None and by_id.get(held.uuid) is held:
                del by_id[held.uuid]
        for name in changed:
            topic = self.topics.get(name)
            if topic is not None:
                by_id[topic.uuid] = topic
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_derivation", _Derivation(weakref.ref(base), frozenset(changed)))

    def changed_topics_since(self, base: "ClusterImage") -> frozenset[str] | None:
        """The names of the topics whose entry here is not `base`'s object (replaced, added or removed), when this
        image was made from `base` by a delta; None otherwise (the caller compares every topic)."""
        derivation = self._derivation
        if derivation is None or derivation.base() is not base:
            return None
        return derivation.topics

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        """The topic with this id (Fetch v13+, Metadata v10+ name topics by id), None if none has it."""
        return self._by_id.get(topic_id) if topic_id != NO_TOPIC_ID else None

    def broker(self, node_id: BrokerId) -> BrokerEndpoint | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)

    @property
    def live_brokers(self) -> tuple[BrokerEndpoint, ...]:
        """The brokers clients are told about (Kafka lists only unfenced brokers)."""
        return tuple(b for b in self.brokers if not b.fenced)

    def partition(self, topic: str, index: int) -> PartitionAssignment | None:
        metadata = self.topics.get(topic)
        if metadata is None or not 0 <= index < len(metadata.partitions):
            return None
        return metadata.partitions[index]


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A CreateTopics entry after decoding: -1 means "broker default" for both counts."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: Mapping[str, str]
    assignments: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
