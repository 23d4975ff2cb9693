"""Idempotent-producer state of one partition (Kafka's `ProducerStateManager`, without transactions).

Per producer id: its current epoch, the last sequence appended, and the offsets of the last
`RETAINED_BATCHES` batches, so a retried batch is acknowledged with its original offsets instead of
being appended twice. Rules (`ProducerAppendInfo.checkSequence`):

* an epoch older than the current one is fenced: INVALID_PRODUCER_EPOCH;
* a new producer id or a newer epoch must start at sequence 0;
* within an epoch, a batch equal to a retained one is a duplicate; otherwise its base sequence must be
  last_sequence + 1 (mod 2**31), else OUT_OF_ORDER_SEQUENCE_NUMBER.

State lives in memory. Followers keep it too, from the headers of the batches they replicate
(`record_replicated`), so a new leader recognises a producer's retries; after a restart or a truncation
the partition rebuilds it from the batch headers at the tail of the log. Event loop only.
"""

from collections import deque
from dataclasses import dataclass, field

from brokerd.records.batch import NO_PRODUCER_ID, NO_TIMESTAMP, BatchHeader
from brokerd.replication.errors import InvalidProducerEpochError, OutOfOrderSequenceError

RETAINED_BATCHES = 5
"""Kafka's `max.in.flight.requests.per.connection` ceiling for idempotence."""
SEQUENCE_MODULUS = 1 << 31
"""Sequences wrap at int32 like Kafka's `DefaultRecordBatch.incrementSequence`."""


def last_sequence(batch: BatchHeader) -> int:
    return (batch.base_sequence + batch.record_count - 1) % SEQUENCE_MODULUS


@dataclass(frozen=True, slots=True)
class BatchOffsets:
    base_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    log_append_time_ms: int


@dataclass(slots=True)
class ProducerEntry:
    producer_epoch: int
    batches: deque[BatchOffsets] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


class ProducerStateTable:
    """producer_id → ProducerEntry for one partition."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def check(self, batch: BatchHeader) -> BatchOffsets | None:
        """The original offsets if `batch` is a duplicate; None if it may be appended; raises otherwise."""
        entry = self._entries.get(batch.producer_id)
        if entry is None or batch.producer_epoch > entry.producer_epoch:
            if batch.base_sequence != 0:
                raise OutOfOrderSequenceError(
                    f"producer {batch.producer_id} epoch {batch.producer_epoch} must start at sequence 0, "
                    f"got {batch.base_sequence}"
                )
            return None
        if batch.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"producer {batch.producer_id} epoch {batch.producer_epoch} is older than {entry.producer_epoch}"
            )
        for retained in entry.batches:
            if retained.base_sequence == batch.base_sequence and retained.last_sequence == last_sequence(batch):
                return retained
        expected = (entry.last_sequence + 1) % SEQUENCE_MODULUS
        if batch.base_sequence != expected:
            raise OutOfOrderSequenceError(
                f"producer {batch.producer_id}: expected sequence {expected}, got {batch.base_sequence}"
            )
        return None

    def record(self, batch: BatchHeader, offsets: BatchOffsets) -> None:
        """Remember an appended batch (after `check` returned None and the append succeeded)."""
        entry = self._entries.get(batch.producer_id)
        if entry is None or batch.producer_epoch != entry.producer_epoch:
            entry = self._entries[batch.producer_id] = ProducerEntry(batch.producer_epoch)
        entry.batches.append(offsets)

    def record_replicated(self, batch: BatchHeader) -> None:
        """A batch appended as follower or found in the log (offsets already assigned): remember it
        without sequence checks, as Kafka's replication-origin `ProducerAppendInfo` does."""
        if batch.producer_id == NO_PRODUCER_ID:
            return
        entry = self._entries.get(batch.producer_id)
        if entry is None or batch.producer_epoch > entry.producer_epoch:
            entry = self._entries[batch.producer_id] = ProducerEntry(batch.producer_epoch)
        elif batch.producer_epoch < entry.producer_epoch:
            return
        entry.batches.append(BatchOffsets(batch.base_sequence, last_sequence(batch), batch.base_offset,
                                          batch.base_offset + batch.last_offset_delta, NO_TIMESTAMP))

    def clear(self) -> None:
        self._entries.clear()
