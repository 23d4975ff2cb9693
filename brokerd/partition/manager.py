"""Partitions this broker leads, over `brokerd.storage` logs, driven by the metadata image.

`Partition` adds to a `Log` what the Kafka protocol needs: the leader epoch stamped on appended
batches, the high watermark (standalone: HW = log end offset, as there are no followers), the
idempotent-producer table, and fetch wake-ups. Logs are opened lazily on first use and deleted when
their topic leaves the metadata image. Event loop only; storage calls are synchronous and short.

Invariant: log_start_offset <= high_watermark <= log_end_offset.
"""

from dataclasses import dataclass

from brokerd.errors import UnknownTopicOrPartitionError
from brokerd.metadata.image import ClusterImage
from brokerd.metadata.store import MetadataStore
from brokerd.partition.batch import read_single_batch
from brokerd.partition.errors import NotLeaderOrFollowerError
from brokerd.partition.producer_state import BatchOffsets, ProducerStateTable, last_sequence
from brokerd.partition.waiters import AppendWaiters
from brokerd.records.batch import NO_PRODUCER_ID
from brokerd.storage import FileRegion, Log, LogManager


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    """-1 unless the topic uses LogAppendTime."""
    log_start_offset: int


class Partition:
    """One led partition. Not thread-safe; called only from the event loop."""

    __slots__ = ("topic", "index", "leader_epoch", "_log", "_producers", "_waiters")

    def __init__(self, topic: str, index: int, leader_epoch: int, log: Log, waiters: AppendWaiters) -> None:
        self.topic = topic
        self.index = index
        self.leader_epoch = leader_epoch
        self._log = log
        self._producers = ProducerStateTable()
        self._waiters = waiters

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._log.log_end_offset

    def append(self, records: bytes) -> AppendResult:
        """Append one producer batch (header checks here; CRC, magic and max.message.bytes in storage);
        a duplicate of a retained idempotent batch returns its original offsets without touching the log."""
        batch = read_single_batch(records)
        if batch.producer_id == NO_PRODUCER_ID:
            return self._append(records)
        duplicate = self._producers.check(batch)
        if duplicate is not None:
            return AppendResult(duplicate.first_offset, duplicate.log_append_time_ms, self.log_start_offset)
        result = self._append(records)
        self._producers.record(batch, BatchOffsets(batch.base_sequence, last_sequence(batch), result.base_offset,
                                                   result.base_offset + batch.record_count - 1,
                                                   result.log_append_time_ms))
        return result

    def _append(self, records: bytes) -> AppendResult:
        info = self._log.append_as_leader(records, self.leader_epoch)
        self._waiters.notify((self.topic, self.index))
        return AppendResult(info.first_offset, info.log_append_time_ms, info.log_start_offset)

    def read(self, fetch_offset: int, max_bytes: int) -> FileRegion | None:
        """Whole batches from the one containing `fetch_offset` up to the high watermark; at least one
        batch even if larger than `max_bytes` (KIP-74). None when `fetch_offset` is the high watermark.
        Raises OffsetOutOfRangeError outside [log_start_offset, high_watermark]."""
        if fetch_offset == self.high_watermark:
            return None
        region = self._log.read(fetch_offset, max_bytes, self.high_watermark)
        return region if region.length else None

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        return self._log.offset_for_timestamp(timestamp_ms)

    def delete_records_before(self, offset: int) -> int:
        return self._log.delete_records_before(offset)


class PartitionManager:
    """Led partitions by (topic, index), kept in step with the metadata image."""

    def __init__(self, log_manager: LogManager, metadata: MetadataStore, node_id: int) -> None:
        self._log_manager = log_manager
        self._metadata = metadata
        self._node_id = node_id
        self._partitions: dict[tuple[str, int], Partition] = {}
        self.waiters = AppendWaiters()
        metadata.add_listener(self._on_metadata_change)

    def get(self, topic: str, index: int) -> Partition:
        """The led partition; raises UnknownTopicOrPartitionError or NotLeaderOrFollowerError."""
        partition = self._partitions.get((topic, index))
        if partition is not None:
            return partition
        metadata = self._metadata.image.topics.get(topic)
        if metadata is None or not 0 <= index < len(metadata.partitions):
            raise UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")
        assignment = metadata.partitions[index]
        if assignment.leader_id != self._node_id:
            raise NotLeaderOrFollowerError(f"broker {self._node_id} does not lead {topic}-{index}")
        log = self._log_manager.get_or_create_log(topic, index, dict(metadata.configs))
        partition = Partition(topic, index, assignment.leader_epoch, log, self.waiters)
        self._partitions[(topic, index)] = partition
        return partition

    def _on_metadata_change(self, old: ClusterImage, new: ClusterImage) -> None:
        for name, topic in old.topics.items():
            current = new.topics.get(name)
            if current is None or current.topic_id != topic.topic_id:
                for assignment in topic.partitions:
                    self._partitions.pop((name, assignment.partition), None)
                    self._log_manager.delete_log(name, assignment.partition)
            elif current.configs != topic.configs:
                self._log_manager.update_topic_config(name, dict(current.configs))
