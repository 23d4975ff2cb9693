"""`LogCleaner`: log compaction (`cleanup.policy=compact` / `compact,delete`; Kafka `LogCleaner`).

Per log, the *dirty* section starts at the first dirty offset (the cleaner checkpoint,
`cleaner-offset-checkpoint` per log dir) and ends at the first *uncleanable* offset: the active segment,
or the first segment holding a record younger than `min.compaction.lag.ms`. A pass runs when the dirty
bytes are at least `min.cleanable.dirty.ratio` of the cleanable bytes (or a dirty segment is older
than `max.compaction.lag.ms`):

1. Map every key in the dirty section to its last offset (a dict of key bytes; unbounded memory, where
   Kafka bounds it with a fixed-size hash map).
2. Recopy each cleanable segment into `<base>.log.cleaned`, dropping records whose key reappears at a
   later offset, and tombstones (null value) older than `delete.retention.ms` (measured from the
   tombstone's timestamp). Untouched batches are copied verbatim; a partly kept batch is rebuilt
   uncompressed with the same base offset, so every surviving record keeps its offset
   (`records.batch.build_filtered_batch`). Control batches are kept.
3. `Log.replace_segment` swaps each copy in under the log lock (a rename); appends and reads never wait
   for the copying, which runs without the lock on inactive segments only.

Thread-safety: called from the maintenance thread only; the checkpoint map has its own lock.
"""

import threading
from pathlib import Path

from brokerd.clock import Clock
from brokerd.records import batch as rb
from brokerd.storage import checkpoints
from brokerd.storage.config import LONG_MAX
from brokerd.storage.log import Log
from brokerd.storage.segment import CLEANED_SUFFIX, LogSegment, StoredBatch

CHECKPOINT_FILE = "cleaner-offset-checkpoint"


class LogCleaner:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._first_dirty: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    # --- checkpoint ------------------------------------------------------------------------------------

    def load_checkpoint(self, log_dir: Path) -> None:
        with self._lock:
            self._first_dirty.update(checkpoints.read_offsets(log_dir / CHECKPOINT_FILE))

    def checkpoint_offsets(self) -> dict[tuple[str, int], int]:
        """Each known partition's first dirty offset (a `CHECKPOINT_FILE` holds those of its dir's logs): only
        compacted logs have one, so this is small however many logs the broker has."""
        with self._lock:
            return dict(self._first_dirty)

    def forget(self, log: Log) -> None:
        with self._lock:
            self._first_dirty.pop((log.topic, log.partition), None)

    def first_dirty_offset(self, log: Log) -> int:
        with self._lock:
            stored = self._first_dirty.get((log.topic, log.partition), 0)
        return min(max(stored, log.log_start_offset), log.log_end_offset)

    # --- cleaning --------------------------------------------------------------------------------------

    def maybe_clean(self, log: Log, now_ms: int) -> bool:
        """Compact `log` if it is dirty enough; True if a pass ran."""
        config = log.config
        segments = log.segments()
        first_dirty = self.first_dirty_offset(log)
        cleanable: list[LogSegment] = []
        for segment in segments[:-1]:
            if config.min_compaction_lag_ms > 0 and segment.max_timestamp > now_ms - config.min_compaction_lag_ms:
                break
            cleanable.append(segment)
        dirty = [segment for segment in cleanable if segment.next_offset > first_dirty]
        if not dirty:
            return False
        dirty_bytes = sum(segment.size for segment in dirty)
        total_bytes = sum(segment.size for segment in cleanable)
        overdue = config.max_compaction_lag_ms != LONG_MAX and any(
            segment.rolling_timestamp is not None
            and segment.rolling_timestamp < now_ms - config.max_compaction_lag_ms for segment in dirty)
        if total_bytes == 0 or (dirty_bytes / total_bytes < config.min_cleanable_dirty_ratio and not overdue):
            return False
        first_uncleanable = segments[len(cleanable)].base_offset
        with log.log_dir.io_guard():
            offset_map = self._build_offset_map(dirty, first_dirty)
            delete_horizon_ms = now_ms - config.delete_retention_ms
            for segment in cleanable:
                if segment.deleted:
                    continue
                cleaned = self._clean_segment(log, segment, offset_map, delete_horizon_ms)
                if cleaned is not None:
                    log.replace_segment(segment, cleaned)
        with self._lock:
            self._first_dirty[(log.topic, log.partition)] = first_uncleanable
        return True

    @staticmethod
    def _build_offset_map(dirty: list[LogSegment], first_dirty: int) -> dict[bytes, int]:
        offset_map: dict[bytes, int] = {}
        for segment in dirty:
            for _, header, data in segment.batches():
                if header.is_control or header.last_offset < first_dirty:
                    continue
                for record in rb.iter_records(data, header):
                    offset = header.base_offset + record.offset_delta
                    if record.key is not None and offset >= first_dirty:
                        offset_map[record.key] = offset
        return offset_map

    def _clean_segment(self, log: Log, segment: LogSegment, offset_map: dict[bytes, int],
                       delete_horizon_ms: int) -> LogSegment | None:
        """A compacted copy of `segment` (files `*.cleaned`, fsynced), or None if nothing would change."""
        cleaned = LogSegment.create(log.dir, segment.base_offset, segment._handles,
                                    log.config.index_interval_bytes, self.clock.now_ms(), CLEANED_SUFFIX)
        changed = False
        for _, header, data in segment.batches():
            if header.is_control:
                self._copy(cleaned, data, header)
                continue
            records = list(rb.iter_records(data, header))
            kept = [record for record in records
                    if self._retain(header, record, offset_map, delete_horizon_ms)]
            if len(kept) == len(records):
                self._copy(cleaned, data, header)
                continue
            changed = True
            if kept:
                rebuilt = rb.build_filtered_batch(header, kept)
                self._copy(cleaned, memoryview(rebuilt), rb.read_header(rebuilt))
        if not changed:
            cleaned.discard()
            return None
        cleaned.write_indexes()
        cleaned.fsync(cleaned.file())
        return cleaned

    @staticmethod
    def _retain(header: rb.BatchHeader, record: rb.Record, offset_map: dict[bytes, int],
                delete_horizon_ms: int) -> bool:
        if record.key is None:
            return True
        if offset_map.get(record.key, -1) > header.base_offset + record.offset_delta:
            return False
        return record.value is not None or rb.record_timestamp(header, record) >= delete_horizon_ms

    @staticmethod
    def _copy(cleaned: LogSegment, data: memoryview, header: rb.BatchHeader) -> None:
        cleaned.append(data, [StoredBatch(0, header.size, header.last_offset, header.max_timestamp)],
                       header.next_offset)
