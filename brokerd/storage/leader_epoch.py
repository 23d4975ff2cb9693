"""`LeaderEpochCache`: which leader epoch wrote which offsets (Kafka `LeaderEpochFileCache`, KIP-101).

A sorted list of `(epoch, start_offset)`: epoch E's records start at `start_offset` and end where the
next epoch starts (or at the log end offset for the latest epoch). Epochs and start offsets both
strictly increase. A change is kept in memory and written to `leader-epoch-checkpoint` in the partition
directory (`checkpoints.write_epochs`, atomic replace) by `write`, which `Log.flush` calls — then fsyncs it —
before it moves the recovery point, and `Log.close` at a clean shutdown (as Kafka since KAFKA-15046, which
stopped fsyncing it on every change). A broker that becomes leader of thousands of partitions at once (a
failover: 3,300 at 10,000 partitions) would otherwise hold its event loop for a file write per partition (and
earlier two fsyncs). Durability follows the data's: the epochs of every fsynced batch are durable; batches past
the recovery point are re-validated after a crash, and their epochs assigned again from their headers
(`Log._load`), whatever the checkpoint kept — an epoch that wrote nothing and is lost in a crash is one no
follower can have fetched from.

Not thread-safe: the owning `Log` serialises access under its lock.
"""

from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

from brokerd.storage import checkpoints

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
FILE_NAME = "leader-epoch-checkpoint"


class LeaderEpochCache:
    def __init__(self, path: Path, log_end_offset: Callable[[], int]) -> None:
        self.path = path
        self._log_end_offset = log_end_offset
        self._entries: list[tuple[int, int]] = checkpoints.read_epochs(path)
        self.unwritten = False
        """The entries changed since the file was last written."""
        self.unsynced = False
        """The file changed since `Log.flush` last fsynced it."""

    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset`. A no-op for the latest epoch; entries that
        conflict with it (a later-or-equal epoch, or a start offset at or after it) are replaced."""
        if epoch < 0:
            return
        if self._entries and self._entries[-1][0] == epoch and self._entries[-1][1] <= start_offset:
            return
        kept = [(e, o) for e, o in self._entries if e < epoch and o < start_offset]
        self._entries = [*kept, (epoch, start_offset)]
        self._persist()

    def end_offset_for(self, requested_epoch: int) -> tuple[int, int]:
        """(epoch, end_offset) for OffsetForLeaderEpoch: the largest epoch <= `requested_epoch` and the
        offset where the following epoch starts (the log end offset for the latest epoch);
        (UNDEFINED_EPOCH, UNDEFINED_OFFSET) if `requested_epoch` is unknown or beyond the latest."""
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch == self._entries[-1][0]:
            return requested_epoch, self._log_end_offset()
        epochs = [e for e, _ in self._entries]
        higher = bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        floor_epoch = epochs[higher - 1] if higher > 0 else requested_epoch
        return floor_epoch, self._entries[higher][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after `end_offset` (the log was truncated to it)."""
        kept = [(e, o) for e, o in self._entries if o < end_offset]
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget epochs wholly before `start_offset`; the epoch holding it now starts there."""
        before = [i for i, (_, o) in enumerate(self._entries) if o <= start_offset]
        if not before:
            return
        last = before[-1]
        kept = [(self._entries[last][0], start_offset), *self._entries[last + 1 :]]
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def assign_from_batch(self, epoch: int, base_offset: int) -> None:
        """Recovery: a batch of `epoch` at `base_offset` re-read from the log; recorded if its epoch is newer
        than every one known (Kafka `LogSegment.recover`)."""
        if epoch > self.latest_epoch:
            self.assign(epoch, base_offset)

    def write(self) -> None:
        """Write the entries to the file if they changed since (no fsync: `unsynced` tells `Log.flush`)."""
        if self.unwritten:
            entries, self.unwritten = self._entries, False  # a change meanwhile sets it again: written next time
            checkpoints.write_epochs(self.path, entries, sync=False)
            self.unsynced = True

    def _persist(self) -> None:
        self.unwritten = True
