"""The coordinator's side of its `__consumer_offsets` partition: the records it writes (group metadata after a
rebalance, committed offsets, tombstones) through the injected `append`, how a failed write is answered,
and the replay of the partition's records when it loads. Record formats: `kafkaspec.consumer_offsets`
(Kafka's own, byte for byte).

`append(records)` is the broker's (`GroupManager` → `ReplicaManager.append`, acks=all): it returns once the
records are on every ISR member and raises a `BrokerError` carrying the Kafka error otherwise, which is
translated here as Kafka's `GroupMetadataManager` translates it for the client.
"""

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from brokerd.groups import errors
from brokerd.groups.state import Group
from brokerd.types import TopicPartition
from kafkaspec.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_record,
    encode_key,
    encode_value,
)

logger = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]
"""A `__consumer_offsets` record: key and value bytes (value None: a tombstone)."""

Append = Callable[[list[Record]], Awaitable[None]]
GroupOffsets = dict[TopicPartition, OffsetCommitValue]

# Kafka's error translation for a failed append (GroupMetadataManager.storeGroup / storeOffsets).
_APPEND_ERRORS = {
    "UNKNOWN_TOPIC_OR_PARTITION": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "COORDINATOR_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT": "COORDINATOR_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER": "NOT_COORDINATOR",
    "KAFKA_STORAGE_ERROR": "NOT_COORDINATOR",
}
_TOO_LARGE = frozenset({"MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_FETCH_SIZE"})


def _append_error(exc: BaseException, *, offsets: bool) -> errors.AppendFailedError:
    name = getattr(exc, "kafka_error", "UNKNOWN_SERVER_ERROR")
    if name in _TOO_LARGE:
        return errors.AppendFailedError("INVALID_COMMIT_OFFSET_SIZE" if offsets else "UNKNOWN_SERVER_ERROR")
    return errors.AppendFailedError(_APPEND_ERRORS.get(name, name))


class GroupLog:
    """Writes one coordinator's records. Event loop only."""

    def __init__(self, append: Append) -> None:
        self._append = append

    async def store_group(self, group: Group, assignments: dict[str, bytes]) -> None:
        """The group's metadata for its current generation with `assignments` (member id → assignment).
        Raises AppendFailedError with the error the client gets."""
        record = (encode_key(GroupMetadataKey(group.group_id)), encode_value(group.to_value(assignments)))
        try:
            await self._append([record])
        except Exception as exc:
            raise _append_error(exc, offsets=False) from exc

    async def store_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetCommitValue]) -> None:
        """Committed offsets. Raises AppendFailedError with the error each partition gets."""
        records: list[Record] = [(encode_key(OffsetCommitKey(group_id, topic, partition)), encode_value(value))
                                 for (topic, partition), value in offsets.items()]
        try:
            await self._append(records)
        except Exception as exc:  # any append failure is reported to the client
            raise _append_error(exc, offsets=True) from exc

    async def store_tombstones(self, records: list[Record]) -> None:
        """Deletions are applied in memory first; like Kafka, a failed tombstone write is logged, not raised."""
        if not records:
            return
        try:
            await self._append(records)
        except Exception:
            logger.exception("failed to write %d tombstones to __consumer_offsets", len(records))


def offset_tombstone(group_id: str, tp: TopicPartition) -> Record:
    return encode_key(OffsetCommitKey(group_id, tp[0], tp[1])), None


def group_tombstone(group_id: str) -> Record:
    return encode_key(GroupMetadataKey(group_id)), None


def replay(records: Iterable[Record]) -> tuple[dict[str, GroupMetadataValue], dict[str, GroupOffsets]]:
    """The partition's records in log order, folded (later records win, tombstones delete) into each group's
    metadata and each group's committed offsets. A record this broker cannot read (malformed, or a newer
    schema version) is logged and skipped."""
    offsets: dict[str, GroupOffsets] = {}
    metadata: dict[str, GroupMetadataValue] = {}
    for raw_key, raw_value in records:
        try:
            key, value = decode_record(raw_key, raw_value)
        except SchemaError as exc:
            logger.warning("skipping an unreadable __consumer_offsets record (key %r): %s", raw_key[:64], exc)
            continue
        if isinstance(key, OffsetCommitKey):
            group_offsets = offsets.setdefault(key.group_id, {})
            if value is None:
                group_offsets.pop((key.topic, key.partition), None)
            else:
                assert isinstance(value, OffsetCommitValue)
                group_offsets[TopicPartition(key.topic, key.partition)] = value
        elif value is None:
            metadata.pop(key.group_id, None)
        else:
            assert isinstance(value, GroupMetadataValue)
            metadata[key.group_id] = value
    return metadata, offsets
