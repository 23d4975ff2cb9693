"""`Log`: one partition's commit log: an ordered list of `LogSegment`s in `<log.dir>/<topic>-<partition>/`.

Glossary (used everywhere in storage):

- `log_start_offset` (LSO here, not "last stable"): the first offset a reader may fetch; moved forward
  by retention and `delete_records_before` (DeleteRecords).
- `log_end_offset` (LEO): the offset the next appended record gets.
- `recovery_point`: every offset below it is fsynced; after an unclean shutdown only the segments from
  the recovery point on are re-validated.
- `high_watermark`: set by the replication layer (`brokerd.replication.partition`), which owns it; storage only keeps
  it so that the log manager can checkpoint it, and clamps it into the log when loading.
- `leader_epoch`: the leader generation that wrote a batch (stored in each batch header and tracked by
  `leader_epoch_cache`).

Invariants: segments are sorted by `base_offset` and do not overlap; only the last one (the active
segment) is appended to; `first segment base_offset <= log_start_offset <= log_end_offset`;
`recovery_point <= log_end_offset`; after loading, `log_start_offset <= high_watermark <= log_end_offset`.

Concurrency contract: public methods are called from one thread (the broker's asyncio event loop).
Appends only write to the page cache (no fsync unless `flush.messages` asks), so they are fast enough to
call inline. The maintenance thread of `LogManager` (retention, `flush.ms`, flushes after a roll,
compaction) calls the `maybe_*`/`delete_*`/`flush`/`replace_segment` methods concurrently; every method
holds `self.lock` only for in-memory work, and fsyncs and compaction copies run outside it. All disk
I/O runs in the log directory's `io_guard` (an OSError takes the directory offline). A log tells its manager
when it has work for maintenance (`LogContext.maintenance_due`: a roll, a scheduled file deletion, a first
unflushed message under a finite `flush.ms`), so an idle log is not visited by the flush and deletion passes.
"""

import os
import threading
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.clock import Clock
from brokerd.records import batch as rb
from brokerd.records.errors import InvalidRecordError
from brokerd.storage.checkpoints import fsync_dir, fsync_file
from brokerd.storage.config import LONG_MAX, LogConfig
from brokerd.storage.errors import OffsetOutOfRangeError
from brokerd.storage.file_handles import FileHandleCache, SegmentFile
from brokerd.storage.leader_epoch import FILE_NAME as LEADER_EPOCH_FILE
from brokerd.storage.leader_epoch import LeaderEpochCache
from brokerd.storage.log_dir import LogDirectory
from brokerd.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    LOG_SUFFIX,
    LogSegment,
    RollParams,
    StoredBatch,
)
from brokerd.storage.validator import validate_append


@dataclass(frozen=True, slots=True)
class FileRegion:
    """A byte range of a segment file for `os.sendfile` / `loop.sendfile`: whole batches, except that the
    last one may be cut at `max_bytes` (Kafka does the same; clients drop a partial trailing batch).
    `file` stays readable for as long as the region is referenced, even if the segment is deleted."""

    file: SegmentFile
    position: int
    length: int


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    log_append_time_ms: int
    """The broker timestamp stamped on LogAppendTime topics; -1 under CreateTime."""
    log_start_offset: int
    record_count: int


@dataclass(frozen=True, slots=True)
class LogContext:
    """Services a log shares with its siblings in a `LogManager`."""

    clock: Clock
    handles: FileHandleCache
    log_dir: LogDirectory
    maintenance_due: Callable[["Log"], None]
    """Called (under the log's lock) when the log gets work for a maintenance pass: a rolled segment to flush,
    files to delete later, or unflushed messages under a finite `flush.ms` (see `Log.maintenance_pending`)."""
    checkpoint_changes: "CheckpointChanges"
    """Where a log records that a value the log manager checkpoints changed, so that a checkpoint pass looks only
    at the logs that changed."""
    log_start_moved: Callable[["Log"], None]
    """Called when `log_start_offset` changed (retention on the maintenance thread, DeleteRecords, truncation), from
    whichever thread changed it: a leader's followers must hear of it (`LogManager.add_log_start_listener`)."""


@dataclass(frozen=True, slots=True)
class CheckpointChanges:
    """The logs whose checkpointed offsets changed since a checkpoint pass took them, one set per offset (a log
    added or removed is put in all three by its manager). Added to from any thread without a lock (`set.add` of a
    log, hashed by identity, is atomic); `take` hands a pass what is there without losing a concurrent change: a
    log added meanwhile either stays for the next pass or is taken before the pass reads its offset."""

    log_start_offset: set["Log"] = field(default_factory=set)
    recovery_point: set["Log"] = field(default_factory=set)
    high_watermark: set["Log"] = field(default_factory=set)

    def add(self, log: "Log") -> None:
        """Every offset of `log` (it was added or removed)."""
        self.log_start_offset.add(log)
        self.recovery_point.add(log)
        self.high_watermark.add(log)

    @staticmethod
    def take(changed: set["Log"]) -> list["Log"]:
        """The logs in `changed`, removed from it; the caller reads their offsets afterwards."""
        taken = list(changed)
        changed.difference_update(taken)
        return taken


@dataclass(frozen=True, slots=True)
class LogState:
    """What the log manager's checkpoints remember about a log across restarts."""

    log_start_offset: int = 0
    recovery_point: int = 0
    clean_shutdown: bool = False
    high_watermark: int = 0


def read_bytes(region: FileRegion) -> bytes:
    """The bytes of `region` (for tests and transports without sendfile)."""
    chunks = []
    position, remaining = region.position, region.length
    while remaining > 0:
        chunk = os.pread(region.file.fileno(), remaining, position)
        if not chunk:
            break
        chunks.append(chunk)
        position += len(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class Log:
    def __init__(self, directory: Path, topic: str, partition: int, config: LogConfig,
                 context: LogContext) -> None:
        """An unloaded log; use `Log.open`."""
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.lock = threading.RLock()
        self._context = context
        self._log_start_offset = 0
        self._recovery_point = 0
        self._high_watermark = 0
        self.closed = False
        self._segments: list[LogSegment] = []
        self._base_offsets: list[int] = []
        self._unflushed_messages = 0
        self._last_flush_ms = context.clock.monotonic_ms()
        self._dir_needs_fsync = False
        self._pending_roll_flush: int | None = None
        """After a roll: flush segments below this offset (done by maintenance, off the append path)."""
        self._pending_file_deletions: list[tuple[int, list[Path]]] = []
        """(unlink at monotonic ms, paths) for segments renamed to `.deleted`."""
        self.leader_epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_FILE, lambda: self.log_end_offset)

    def __repr__(self) -> str:
        return f"Log({self.topic}-{self.partition}, [{self.log_start_offset}, {self.log_end_offset}))"

    @property
    def log_dir(self) -> LogDirectory:
        return self._context.log_dir

    # The three checkpointed offsets: setting one to a new value tells the manager (`checkpoint_changes`).

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        if offset != self._log_start_offset:
            self._log_start_offset = offset
            self._context.checkpoint_changes.log_start_offset.add(self)
            self._context.log_start_moved(self)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        if offset != self._recovery_point:
            self._recovery_point = offset
            self._context.checkpoint_changes.recovery_point.add(self)

    @property
    def high_watermark(self) -> int:
        """The replication layer's high watermark, persisted in `replication-offset-checkpoint`."""
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        if offset != self._high_watermark:
            self._high_watermark = offset
            self._context.checkpoint_changes.high_watermark.add(self)

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def segments(self) -> list[LogSegment]:
        """A snapshot of the segment list, oldest first."""
        with self.lock:
            return list(self._segments)

    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    # --- loading ---------------------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, topic: str, partition: int, config: LogConfig, context: LogContext,
             state: LogState) -> "Log":
        """Load (or create) the log in `directory`. After an unclean shutdown, every segment holding
        offsets at or after `state.recovery_point` is re-validated and the torn or corrupt tail
        truncated, the leader epochs of its batches assigned again, then the recovered part is fsynced."""
        log = cls(directory, topic, partition, config, context)
        with log.lock, context.log_dir.io_guard():
            directory.mkdir(parents=True, exist_ok=True)
            log._load(state)
        if not state.clean_shutdown:
            log.flush()
        return log

    def _load(self, state: LogState) -> None:
        names = os.listdir(self.dir)
        for name in names:
            if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")):
                (self.dir / name).unlink()
        bases = sorted(int(name[: -len(LOG_SUFFIX)]) for name in names if name.endswith(LOG_SUFFIX))
        context = self._context
        interval = self.config.index_interval_bytes
        for i, base in enumerate(bases):
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            trusted = state.clean_shutdown or (next_base is not None and next_base <= state.recovery_point)
            if trusted:
                segment = LogSegment.open(self.dir, base, context.handles, interval)
            else:
                segment = LogSegment.open_for_recovery(self.dir, base, context.handles, interval)
                truncated = segment.recover(lambda header: self.leader_epoch_cache.assign_from_batch(
                    header.partition_leader_epoch, header.base_offset))
                if truncated and next_base is not None:
                    self._segments.append(segment)
                    for later in bases[i + 1 :]:
                        self._unlink_segment_files(later)
                    break
            self._segments.append(segment)
        if not self._segments:
            start = max(state.log_start_offset, 0)
            self._segments.append(self._new_segment(start))
        self._base_offsets = [segment.base_offset for segment in self._segments]
        leo = self.log_end_offset
        self.log_start_offset = min(max(state.log_start_offset, self._segments[0].base_offset), leo)
        self.recovery_point = leo if state.clean_shutdown else min(state.recovery_point, leo)
        self.high_watermark = min(max(state.high_watermark, self.log_start_offset), leo)
        self.leader_epoch_cache.truncate_from_end(leo)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)

    def _unlink_segment_files(self, base_offset: int) -> None:
        probe = LogSegment(self.dir, base_offset, self._context.handles, 0, 0)
        self._context.handles.forget(probe.log_path)
        for path in (probe.log_path, probe.index_path, probe.time_index_path):
            path.unlink(missing_ok=True)

    def _new_segment(self, base_offset: int) -> LogSegment:
        self._dir_needs_fsync = True
        return LogSegment.create(self.dir, base_offset, self._context.handles,
                                 self.config.index_interval_bytes, self._context.clock.now_ms())

    # --- append ----------------------------------------------------------------------------------------

    def append_as_leader(self, buf: bytes | bytearray | memoryview, leader_epoch: int) -> AppendInfo:
        """Validate and append one or more v2 batches, assigning offsets from the log end offset.

        Offsets and the leader epoch are written into the batch headers in place (`buf` is modified if
        it is writable; pass a bytearray to avoid a copy). LogAppendTime topics also get maxTimestamp
        and the CRC rewritten. Raises a BrokerError (the log unchanged) if any batch is invalid. The rules of
        a producer's batch (counts, no control batch) are the caller's, checked once before the append
        (`records.batch.read_produced_batch`).
        """
        with self.lock, self.log_dir.io_guard():
            now_ms = self._context.clock.now_ms()
            validated = validate_append(buf, self.config, now_ms, from_leader=True)
            view = validated.buffer if not validated.buffer.readonly else memoryview(bytearray(validated.buffer))
            first_offset = offset = self.log_end_offset
            append_time = now_ms if self.config.log_append_time else rb.NO_TIMESTAMP
            stored = []
            for position, header in validated.batches:
                rb.assign_offsets(view, position, offset, leader_epoch)
                max_timestamp = header.max_timestamp
                if self.config.log_append_time:
                    rb.set_log_append_time(view, position, header, now_ms)
                    max_timestamp = now_ms
                last_offset = offset + header.last_offset_delta
                stored.append(StoredBatch(position, header.size, last_offset, max_timestamp))
                offset = last_offset + 1
            self._append(view, stored, now_ms)
            self.leader_epoch_cache.assign(leader_epoch, first_offset)
            self._after_append(validated.record_count)
            return AppendInfo(first_offset, offset - 1, append_time, self.log_start_offset,
                              validated.record_count)

    def append_as_follower(self, buf: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches that already carry offsets and leader epochs (replication), verbatim.
        Checks framing, CRC and sizes, and that offsets continue the log end offset in order."""
        with self.lock, self.log_dir.io_guard():
            now_ms = self._context.clock.now_ms()
            validated = validate_append(buf, self.config, now_ms, from_leader=False)
            expected = self.log_end_offset
            first_offset = validated.batches[0][1].base_offset
            stored = []
            for position, header in validated.batches:
                if header.base_offset < expected:
                    raise InvalidRecordError(f"batch offset {header.base_offset} < expected {expected}")
                stored.append(StoredBatch(position, header.size, header.last_offset, header.max_timestamp))
                expected = header.next_offset
            self._append(validated.buffer, stored, now_ms)
            for _, header in validated.batches:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            self._after_append(validated.record_count)
            return AppendInfo(first_offset, expected - 1, rb.NO_TIMESTAMP, self.log_start_offset,
                              validated.record_count)

    def _append(self, view: memoryview, stored: list[StoredBatch], now_ms: int) -> None:
        segment = self.maybe_roll(len(view), max(b.max_timestamp for b in stored), stored[-1].last_offset,
                                  now_ms)
        if stored[0].last_offset < segment.base_offset:
            raise InvalidRecordError("batch offsets precede the active segment")
        segment.append(view, stored, stored[-1].last_offset + 1)

    def _after_append(self, record_count: int) -> None:
        if not self._unflushed_messages and self.config.flush_ms != LONG_MAX:
            self._context.maintenance_due(self)  # `flush.ms` counts from now
        self._unflushed_messages += record_count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()

    def maybe_roll(self, messages_size: int, max_timestamp: int, last_offset: int, now_ms: int) -> LogSegment:
        """The segment the next append goes to: the active one, or a new one if it must roll. The
        rolled segment's indexes are written now; its fsync is left to maintenance."""
        segment = self._segments[-1]
        params = RollParams(
            max_segment_bytes=self.config.segment_bytes,
            max_segment_ms=self.config.segment_ms - self.config.segment_jitter_ms,
            max_index_entries=self.config.max_index_entries,
            messages_size=messages_size,
            max_timestamp_in_messages=max_timestamp,
            last_offset_in_messages=last_offset,
            now_ms=now_ms,
        )
        if not segment.should_roll(params):
            return segment
        return self.roll()

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (a no-op if the active one is empty)."""
        with self.lock, self.log_dir.io_guard():
            old = self._segments[-1]
            if old.size == 0:
                return old
            old.write_indexes()
            new = self._new_segment(self.log_end_offset)
            self._segments.append(new)
            self._base_offsets.append(new.base_offset)
            self._pending_roll_flush = new.base_offset
            self._context.maintenance_due(self)
            return new

    # --- read ------------------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset_exclusive: int) -> FileRegion:
        """The stored batches from the one holding `offset`, within one segment: at most `max_bytes`
        but always the whole first batch (KIP-74), and nothing at or after `max_offset_exclusive`
        (the high watermark). An empty region (length 0) when there is nothing below the bound.
        Raises OffsetOutOfRangeError unless log_start_offset <= offset <= log_end_offset."""
        with self.lock, self.log_dir.io_guard():
            if not self.log_start_offset <= offset <= self.log_end_offset:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}]")
            bound = min(max_offset_exclusive, self.log_end_offset)
            i = max(bisect_right(self._base_offsets, offset) - 1, 0)
            while i < len(self._segments) and offset < bound:
                segment = self._segments[i]
                if segment.base_offset >= bound:
                    break
                found = segment.find_batch(offset)
                if found is None:
                    i += 1
                    continue
                position, header = found
                end = segment.size if bound >= segment.next_offset else segment.position_of(bound)
                length = min(end - position, max(max_bytes, header.size))
                if length <= 0:
                    break
                return FileRegion(segment.file(), position, length)
            active = self._segments[-1]
            return FileRegion(active.file(), active.size, 0)

    read_bytes = staticmethod(read_bytes)

    def tail_batch_headers(self, max_scan_bytes: int) -> list[rb.BatchHeader]:
        """The headers of the batches in the newest segments, oldest first: whole segments back from
        the active one until `max_scan_bytes` is covered (at least the active segment). Used to rebuild
        idempotent-producer state after a restart or a truncation; headers only, records untouched."""
        with self.lock, self.log_dir.io_guard():
            chosen: list[LogSegment] = []
            covered = 0
            for segment in reversed(self._segments):
                chosen.append(segment)
                covered += segment.size
                if covered >= max_scan_bytes:
                    break
            return [header for segment in reversed(chosen) for _, header, _ in segment.batches()
                    if header.next_offset > self.log_start_offset]

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """Kafka ListOffsets by timestamp: (offset, timestamp) of the first record at or after the log
        start offset whose timestamp is >= `timestamp_ms`; None if there is none. The special
        timestamps (-1 latest, -2 earliest) are the caller's: use log_end_offset / log_start_offset."""
        with self.lock, self.log_dir.io_guard():
            for segment in self._segments:
                if segment.next_offset <= self.log_start_offset:
                    continue
                found = segment.find_offset_by_timestamp(timestamp_ms, self.log_start_offset)
                if found is not None:
                    return found
            return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """ListOffsets MAX_TIMESTAMP (-3, v7+): (offset, timestamp) of the record with the largest
        timestamp at or after the log start offset (the first such record); None if the log has none."""
        with self.lock, self.log_dir.io_guard():
            live = [s for s in self._segments if s.next_offset > self.log_start_offset]
            if not live:
                return None
            found = max(live, key=lambda s: s.max_timestamp).record_with_max_timestamp()
            return found if found is not None and found[0] >= self.log_start_offset else None

    def legacy_offsets_before(self, timestamp_ms: int, max_count: int) -> list[int]:
        """ListOffsets v0 (Kafka `legacyFetchOffsetsBefore`): segment base offsets (and the log end offset
        while the active segment holds data), newest first, from the last whose file was modified at or
        before `timestamp_ms` (-1: from the newest, -2: only the oldest); at most `max_count`."""
        with self.lock, self.log_dir.io_guard():
            points = [(max(s.base_offset, self.log_start_offset), s.last_modified_ms()) for s in self._segments]
            if self._segments[-1].size > 0:
                points.append((self.log_end_offset, self._context.clock.now_ms()))
        if timestamp_ms == -1:
            start = len(points) - 1
        elif timestamp_ms == -2:
            start = 0
        else:
            start = next((i for i in range(len(points) - 1, -1, -1) if points[i][1] <= timestamp_ms), -1)
        return [points[i][0] for i in range(start, max(start - max_count, -1), -1)]

    # --- deletion and truncation -----------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset`; segments wholly below it go.
        Returns the new log start offset."""
        with self.lock, self.log_dir.io_guard():
            if not 0 <= offset <= self.log_end_offset:
                raise OffsetOutOfRangeError(f"offset {offset} is beyond the log end offset {self.log_end_offset}")
            if offset > self.log_start_offset:
                self.log_start_offset = offset
                self.leader_epoch_cache.truncate_from_start(offset)
                self._delete_prefix(lambda segment, next_base: next_base <= self.log_start_offset)
            return self.log_start_offset

    def truncate_to(self, offset: int) -> None:
        """Follower truncation: remove every batch holding offsets >= `offset` (whole batches, so the
        log end offset may end up below `offset`). Truncating below the first segment empties the log
        and restarts it at `offset`."""
        with self.lock, self.log_dir.io_guard():
            if offset < 0:
                raise OffsetOutOfRangeError(f"cannot truncate to negative offset {offset}")
            if offset >= self.log_end_offset:
                return
            if offset <= self._segments[0].base_offset:
                self._schedule_deletion(self._segments)
                self._segments = [self._new_segment(offset)]
                self.log_start_offset = offset
            else:
                keep = bisect_right(self._base_offsets, offset - 1)
                doomed = self._segments[keep:]
                self._segments = self._segments[:keep]
                self._schedule_deletion(doomed)
                self._segments[-1].truncate_to(offset)
            self._base_offsets = [segment.base_offset for segment in self._segments]
            leo = self.log_end_offset
            self.log_start_offset = min(self.log_start_offset, leo)
            self.recovery_point = min(self.recovery_point, leo)
            if self._pending_roll_flush is not None:  # the rolled segments may be gone: flush what is left of them
                self._pending_roll_flush = min(self._pending_roll_flush, leo)
            self.leader_epoch_cache.truncate_from_end(leo)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Follower whose whole log is below the leader's log start offset: drop every segment and
        restart empty at `offset` (Kafka `truncateFullyAndStartAt`)."""
        with self.lock, self.log_dir.io_guard():
            if offset < 0:
                raise OffsetOutOfRangeError(f"cannot restart a log at negative offset {offset}")
            self._schedule_deletion(self._segments)
            self._segments = [self._new_segment(offset)]
            self._base_offsets = [offset]
            self.log_start_offset = offset
            self.recovery_point = offset
            self._pending_roll_flush = None  # no segment it named is left
            self.leader_epoch_cache.truncate_from_end(-1)

    def delete_old_segments(self, now_ms: int) -> int:
        """Retention: delete the oldest inactive segments past `retention.ms` or beyond
        `retention.bytes` (cleanup.policy=delete), and any wholly below the log start offset.
        Never the active segment. Returns the number of segments deleted."""
        with self.lock, self.log_dir.io_guard():
            deleted = self._delete_prefix(lambda segment, next_base: next_base <= self.log_start_offset)
            if not self.config.delete:
                return deleted
            if self.config.retention_ms >= 0:
                deadline = now_ms - self.config.retention_ms
                deleted += self._delete_prefix(lambda segment, _: segment.largest_timestamp() < deadline)
            if self.config.retention_bytes >= 0:
                excess = [self.size_in_bytes() - self.config.retention_bytes]

                def over_budget(segment: LogSegment, _: int) -> bool:
                    if segment.size > excess[0]:
                        return False
                    excess[0] -= segment.size
                    return True

                deleted += self._delete_prefix(over_budget)
            return deleted

    def _delete_prefix(self, predicate: Callable[[LogSegment, int], bool]) -> int:
        """Delete the longest prefix of inactive segments satisfying predicate(segment, next_base)."""
        count = 0
        while count + 1 < len(self._segments) and predicate(
                self._segments[count], self._segments[count + 1].base_offset):
            count += 1
        if count:
            doomed = self._segments[:count]
            self._segments = self._segments[count:]
            self._base_offsets = self._base_offsets[count:]
            self._schedule_deletion(doomed)
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        return count

    def _schedule_deletion(self, doomed: list[LogSegment]) -> None:
        due = self._context.clock.monotonic_ms() + self.config.file_delete_delay_ms
        for segment in doomed:
            self._pending_file_deletions.append((due, segment.rename_to_deleted()))
        if doomed:
            self._context.maintenance_due(self)

    def delete_expired_files(self, now_monotonic_ms: int) -> None:
        """Unlink `.deleted` files whose `file.delete.delay.ms` has passed."""
        with self.lock, self.log_dir.io_guard():
            due = [paths for at, paths in self._pending_file_deletions if at <= now_monotonic_ms]
            self._pending_file_deletions = [
                (at, paths) for at, paths in self._pending_file_deletions if at > now_monotonic_ms]
            for paths in due:
                for path in paths:
                    path.unlink(missing_ok=True)

    # --- compaction support ----------------------------------------------------------------------------

    def replace_segment(self, old: LogSegment, cleaned: LogSegment) -> bool:
        """Swap `old` for its compacted copy `cleaned` (files `*.cleaned`, fsynced). Returns False and
        discards the copy if `old` left the log meanwhile. Crash-safe order: the old indexes go first,
        then each cleaned file is renamed over its final name, so a crash leaves a valid `.log` whose
        missing index is rebuilt on load. Readers holding the old file keep reading the old bytes."""
        with self.lock, self.log_dir.io_guard():
            if self.closed or old not in self._segments or old is self._segments[-1]:
                cleaned.discard()
                return False
            old.index_path.unlink(missing_ok=True)
            old.time_index_path.unlink(missing_ok=True)
            self._context.handles.forget(old.log_path)
            old.deleted = True
            cleaned.promote()
            self._segments[self._segments.index(old)] = cleaned
            self._dir_needs_fsync = True
            return True

    # --- durability ------------------------------------------------------------------------------------

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, up_to_offset) (default: the log end
        offset), then advance the recovery point. The fsyncs run outside the log lock."""
        with self.lock, self.log_dir.io_guard():
            target = self.log_end_offset if up_to_offset is None else min(up_to_offset, self.log_end_offset)
            segments = [segment for segment in self._segments
                        if segment.base_offset < target and segment.next_offset > self.recovery_point]
            if target == self.log_end_offset and self._segments[-1] not in segments and self._segments[-1].size:
                segments.append(self._segments[-1])  # its index files (an empty segment has none to trust)
            work = [(segment, segment.file()) for segment in segments]
            for segment in segments:
                segment.write_indexes()
            self.leader_epoch_cache.write()
            epochs_unsynced, self.leader_epoch_cache.unsynced = self.leader_epoch_cache.unsynced, False
            needs_dir_fsync, self._dir_needs_fsync = self._dir_needs_fsync or epochs_unsynced, False
            flushed_messages = self._unflushed_messages if target == self.log_end_offset else 0
        with self.log_dir.io_guard():
            for segment, file in work:
                segment.fsync(file)
            if epochs_unsynced:  # the epochs of the batches now fsynced (and maybe later ones)
                fsync_file(self.leader_epoch_cache.path)
            if needs_dir_fsync:
                fsync_dir(self.dir)
        with self.lock:
            self.recovery_point = max(self.recovery_point, min(target, self.log_end_offset))
            self._unflushed_messages -= min(flushed_messages, self._unflushed_messages)
            self._last_flush_ms = self._context.clock.monotonic_ms()
            if self._pending_roll_flush is not None and self._pending_roll_flush <= target:
                self._pending_roll_flush = None

    def maybe_flush(self, now_monotonic_ms: int) -> None:
        """Maintenance: flush segments rolled since the last flush, and everything if `flush.ms`
        has passed with unflushed messages."""
        with self.lock:
            rolled = self._pending_roll_flush
            due = (self.config.flush_ms != LONG_MAX and self._unflushed_messages > 0
                   and now_monotonic_ms - self._last_flush_ms >= self.config.flush_ms)
        if due:
            self.flush()
        elif rolled is not None:
            self.flush(rolled)

    def maintenance_pending(self) -> bool:
        """Whether a maintenance pass has work here: a rolled segment not yet flushed, files waiting for
        `file.delete.delay.ms`, or unflushed messages under a finite `flush.ms`. Called under the log's lock by
        the manager before it stops visiting the log: every event that makes this True calls
        `LogContext.maintenance_due` under the same lock, so none is missed."""
        with self.lock:
            return (self._pending_roll_flush is not None or bool(self._pending_file_deletions)
                    or (self._unflushed_messages > 0 and self.config.flush_ms != LONG_MAX))

    def close(self) -> None:
        """Write indexes (clean shutdown keeps them) and release file handles. No fsync; see flush."""
        with self.lock, self.log_dir.io_guard():
            for segment in self._segments:
                segment.write_indexes()
                self._context.handles.forget(segment.log_path)
            self.leader_epoch_cache.write()
            self.closed = True
