"""Consume `__consumer_offsets` and turn its records into commit, group and tombstone events.

Each record's offset in its partition is the commit's `order` (all commits of a group share one
partition, so their orders compare). Records that do not decode (a newer Kafka's formats, another
protocol type than "consumer") are counted and skipped, never fatal.
"""

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafkaspec.consumer_offsets import (
    GroupMetadataKey,
    OffsetCommitKey,
    SchemaError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from kafkaspec.consumer_protocol import AssignmentError, decode_assignment
from monitoring.config import OFFSETS_TOPIC
from monitoring.storage import OffsetStorage

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OffsetCommitted:
    group: str
    topic: str
    partition: int
    offset: int
    order: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class OffsetDeleted:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupGeneration:
    """A consumer group's new generation: (topic, partition) → (client host, client id); empty when the
    group has no members."""

    group: str
    owners: Mapping[tuple[str, int], tuple[str, str]]


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    group: str


Event = OffsetCommitted | OffsetDeleted | GroupGeneration | GroupDeleted


def decode_event(key: bytes | None, value: bytes | None, order: int) -> Event | None:
    """The event one `__consumer_offsets` record means; None for records without one (non-consumer
    groups). Raises SchemaError (or AssignmentError) for a record that does not decode."""
    if key is None:
        raise SchemaError("record without a key")
    decoded = decode_key(key)
    if isinstance(decoded, OffsetCommitKey):
        if value is None:
            return OffsetDeleted(decoded.group_id, decoded.topic, decoded.partition)
        commit = decode_offset_commit_value(value)
        return OffsetCommitted(decoded.group_id, decoded.topic, decoded.partition, commit.offset, order,
                               commit.commit_timestamp_ms)
    assert isinstance(decoded, GroupMetadataKey)
    if value is None:
        return GroupDeleted(decoded.group_id)
    metadata = decode_group_metadata_value(value)
    if metadata.protocol_type != "consumer":
        return None
    owners = {}
    for member in metadata.members:
        for topic, partitions in decode_assignment(member.assignment).items():
            for partition in partitions:
                owners[(topic, partition)] = (member.client_host, member.client_id)
    return GroupGeneration(decoded.group_id, owners)


def store_events(storage: OffsetStorage, events: Iterable[Event], now_ms: int) -> int:
    """Apply events to storage in order; returns how many commits were stored."""
    stored = 0
    for event in events:
        if isinstance(event, OffsetCommitted):
            stored += storage.add_commit(event.group, event.topic, event.partition, event.offset, event.order,
                                         event.timestamp_ms, now_ms)
        elif isinstance(event, OffsetDeleted):
            storage.delete_commits(event.group, event.topic, event.partition)
        elif isinstance(event, GroupGeneration):
            storage.set_owners(event.group, event.owners, now_ms)
        else:
            storage.delete_group(event.group)
    return stored


class OffsetsTopicReader:
    """A librdkafka consumer assigned every partition of `__consumer_offsets` (no group membership, no
    commits), starting where `positions` says or at the beginning. `positions` holds, per partition, the
    offset of the next record to read. `poll` belongs to one thread; `assign` may be called from another."""

    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, str] | None = None) -> None:
        self._consumer = Consumer({
            **(client_config or {}),
            "bootstrap.servers": bootstrap_servers,
            "group.id": "strom-lag-monitor",  # required by librdkafka; never joined, never committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        })
        self.positions: dict[int, int] = {}
        self.undecodable = 0
        self._wanted = 0
        self._start_positions: dict[int, int] = {}

    def assign(self, partition_count: int, positions: Mapping[int, int] | None = None) -> None:
        """Read partitions 0..partition_count-1 (more when the topic grew), from `positions` where known.
        Takes effect at the next `poll` (librdkafka blocks an assignment made while another thread polls)."""
        self._wanted = max(self._wanted, partition_count)
        self._start_positions = dict(positions or {})

    def _apply_assignment(self) -> None:
        new = [p for p in range(self._wanted) if p not in self.positions]
        for p in new:
            self.positions[p] = self._start_positions.get(p, 0)
        self._consumer.incremental_assign([TopicPartition(OFFSETS_TOPIC, p, self.positions[p]) for p in new])

    def poll(self, max_records: int = 10_000, timeout_s: float = 0.2) -> list[Event]:
        """Up to `max_records` records decoded into events (waits at most `timeout_s` for the first)."""
        if self._wanted > len(self.positions):
            self._apply_assignment()
        events: list[Event] = []
        positions = self.positions
        for message in self._consumer.consume(max_records, timeout_s):
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    logger.warning("reading %s: %s", OFFSETS_TOPIC, error)
                continue
            order = message.offset()
            positions[message.partition()] = order + 1
            try:
                event = decode_event(message.key(), message.value(), order)
            except (SchemaError, AssignmentError) as exc:
                self.undecodable += 1
                logger.debug("skipping %s record %d/%d: %s", OFFSETS_TOPIC, message.partition(), order, exc)
                continue
            if event is not None:
                events.append(event)
        return events

    def lag(self, heads: Mapping[int, int]) -> int:
        """Records of `__consumer_offsets` not read yet, given its partitions' log-end offsets."""
        return sum(max(0, head - self.positions.get(p, 0)) for p, head in heads.items())

    def close(self) -> None:
        self._consumer.close()
