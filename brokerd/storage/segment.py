"""`LogSegment`: one `<base_offset>.log` (20-digit, zero-padded) with its `.index` and `.timeindex`.

The `.log` holds whole v2 record batches back to back, byte-for-byte as stored after offset
assignment; every offset in it is >= `base_offset`, and batches' offsets strictly increase (compaction
may leave gaps). The indexes are sparse: one entry per `index.interval.bytes` of log (Kafka
`LogSegment.append`), see `offset_index` and `time_index`. Positions are byte offsets into the `.log`.

In-memory state kept exact on every append/truncate/recover: `size` (bytes), `next_offset` (one past
the last stored offset), `max_timestamp` and `offset_of_max_timestamp` (largest batch maxTimestamp),
`rolling_timestamp` (maxTimestamp of the first batch, which `segment.ms` is measured from).

Crash behaviour: `recover()` re-reads every batch, checks framing, magic, CRC-32C and offset order,
truncates the file at the first bad byte and rebuilds both indexes. Missing or insane index files are
rebuilt from the `.log` on first use.

Lazy opening (memory and file handles proportional to the partitions in use, not hosted): a segment holds
no file handle (the shared `FileHandleCache` opens its `.log` on first read or write) and no index in memory
until one is needed. A segment that was empty when created or loaded ("fresh") has empty indexes by
definition: its index files are neither read nor written until it holds data (an empty segment's index
files are ignored when loaded, so a stale one can never be trusted), and an empty segment is never opened.

Not thread-safe: the owning `Log` serialises every call under its lock. A segment no longer in the
log's list (deleted, replaced by the cleaner) is never written again.
"""

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from brokerd.errors import BrokerError
from brokerd.records import batch as rb
from brokerd.storage.checkpoints import fsync_file
from brokerd.storage.errors import CorruptIndexError
from brokerd.storage.file_handles import FileHandleCache, SegmentFile
from brokerd.storage.offset_index import OffsetIndex
from brokerd.storage.time_index import TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SCAN_CHUNK_BYTES = 8 << 20
MAX_RELATIVE_OFFSET = 2**31 - 1


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(frozen=True, slots=True)
class RollParams:
    """What `should_roll` weighs (Kafka `RollParams`): the segment limits and the pending append."""

    max_segment_bytes: int
    max_segment_ms: int
    """`segment.ms` minus this segment's jitter."""
    max_index_entries: int
    messages_size: int
    max_timestamp_in_messages: int
    last_offset_in_messages: int
    now_ms: int


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """A batch of an append, as the segment indexes it: its position in the append buffer, size,
    last offset and maxTimestamp (after offset assignment)."""

    position: int
    size: int
    last_offset: int
    max_timestamp: int


def scan_batches(file: SegmentFile, start: int, end: int) -> Iterator[tuple[int, rb.BatchHeader, memoryview]]:
    """Yield `(position, header, batch bytes)` for the whole batches in `[start, end)`, reading in large
    chunks. Stops silently at the first batch whose framing does not fit (torn tail, garbage)."""
    fd = file.fileno()
    chunk = memoryview(b"")
    chunk_start = start
    position = start
    while end - position >= rb.HEADER_SIZE:
        if position + rb.HEADER_SIZE > chunk_start + len(chunk):
            chunk = memoryview(os.pread(fd, min(SCAN_CHUNK_BYTES, end - position), position))
            chunk_start = position
        header = rb.read_header(chunk, position - chunk_start)
        size = header.size
        if size < rb.HEADER_SIZE or position + size > end or header.magic != rb.MAGIC:
            return
        if position + size > chunk_start + len(chunk):
            chunk = memoryview(os.pread(fd, max(size, min(SCAN_CHUNK_BYTES, end - position)), position))
            chunk_start = position
            if len(chunk) < size:
                return
        relative = position - chunk_start
        yield position, header, chunk[relative : relative + size]
        position += size


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, handles: FileHandleCache,
                 index_interval_bytes: int, created_ms: int, suffix: str = "") -> None:
        """`suffix` (CLEANED_SUFFIX) names the files of a compacted copy until `promote`."""
        self.base_offset = base_offset
        self.directory = directory
        self._suffix = suffix
        self.log_path = directory / (segment_name(base_offset) + LOG_SUFFIX + suffix)
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = rb.NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.rolling_timestamp: int | None = None
        self.deleted = False
        self._handles = handles
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        """None until first used (see "Lazy opening")."""
        self._fresh = False
        """The indexes are empty (the segment was empty when created or loaded) and not yet in memory: they are
        allocated empty on first use, and their files (whatever they hold) rewritten on the next write."""
        self._bytes_since_last_index_entry = 0

    def _paths(self, suffix: str) -> tuple[Path, Path, Path]:
        name = segment_name(self.base_offset)
        return tuple(self.directory / (name + ext + suffix)  # type: ignore[return-value]
                     for ext in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX))

    @property
    def index_path(self) -> Path:
        """Derived when needed (rarely): a hosted partition keeps one path per segment in memory, not three."""
        return self.directory / (segment_name(self.base_offset) + INDEX_SUFFIX + self._suffix)

    @property
    def time_index_path(self) -> Path:
        return self.directory / (segment_name(self.base_offset) + TIME_INDEX_SUFFIX + self._suffix)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, next_offset={self.next_offset}, size={self.size})"

    # --- lifecycle -------------------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, handles: FileHandleCache,
               index_interval_bytes: int, now_ms: int, suffix: str = "") -> "LogSegment":
        """A new empty segment; its `.log` exists on return (the caller fsyncs the directory). Neither a
        file handle nor an index is allocated until the segment is written or read."""
        segment = cls(directory, base_offset, handles, index_interval_bytes, now_ms, suffix)
        handles.forget(segment.log_path)  # a file of that name cached before (a truncated log) is another inode
        os.close(os.open(segment.log_path, os.O_WRONLY | os.O_CREAT, 0o644))
        segment._fresh = True
        return segment

    @classmethod
    def open_for_recovery(cls, directory: Path, base_offset: int, handles: FileHandleCache,
                          index_interval_bytes: int) -> "LogSegment":
        """An existing segment whose bytes are not trusted: call `recover()` before anything else."""
        log_path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        return cls(directory, base_offset, handles, index_interval_bytes, int(log_path.stat().st_mtime * 1000))

    @classmethod
    def open(cls, directory: Path, base_offset: int, handles: FileHandleCache,
             index_interval_bytes: int) -> "LogSegment":
        """An existing segment whose bytes are trusted (before the recovery point, or after a clean
        shutdown): state comes from the indexes plus a scan of the unindexed tail."""
        log_path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        stat = log_path.stat()
        segment = cls(directory, base_offset, handles, index_interval_bytes, int(stat.st_mtime * 1000))
        segment.size = stat.st_size
        segment._load_tail_state()
        return segment

    def file(self) -> SegmentFile:
        if self.deleted:
            raise FileNotFoundError(f"segment {self.log_path} was deleted")
        return self._handles.get(self.log_path)

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._load_indexes()
        return self._offset_index  # type: ignore[return-value]

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_indexes()
        return self._time_index  # type: ignore[return-value]

    def _load_indexes(self) -> None:
        if self._fresh:
            self._fresh = False
            self._offset_index = OffsetIndex(self.index_path, self.base_offset)
            self._time_index = TimeIndex(self.time_index_path, self.base_offset)
            return
        try:
            self._offset_index = OffsetIndex.load(self.index_path, self.base_offset, self.size)  # type: ignore[assignment]
            self._time_index = TimeIndex.load(self.time_index_path, self.base_offset, self.size)  # type: ignore[assignment]
        except (FileNotFoundError, CorruptIndexError):
            self.rebuild_indexes()

    def _load_tail_state(self) -> None:
        """Recompute next_offset / max timestamp from the indexes and the batches after the last index
        entry (the indexes are trusted here). An empty segment touches neither its indexes nor its file."""
        if self.size == 0:
            self.next_offset = self.base_offset
            self.max_timestamp = rb.NO_TIMESTAMP
            self.offset_of_max_timestamp = self.base_offset
            self.rolling_timestamp = None
            self._bytes_since_last_index_entry = 0
            if self._offset_index is None:
                self._fresh = True
            else:
                self._offset_index.truncate_entries(0)
                self._time_index.truncate_entries(0)  # type: ignore[union-attr]
            return
        last_indexed = self.offset_index.last_entry()
        start = last_indexed[1] if last_indexed else 0
        self.next_offset = self.base_offset
        self.max_timestamp = rb.NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        last_time = self.time_index.last_entry()
        if last_time is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time
        if last_indexed is not None:
            self.next_offset = last_indexed[0] + 1
        for _, header, _data in scan_batches(self.file(), start, self.size):
            self.next_offset = header.next_offset
            self._observe_timestamp(header.max_timestamp, header.last_offset)
        self._bytes_since_last_index_entry = self.size - start
        first = self._first_header()
        self.rolling_timestamp = first.max_timestamp if first else None

    def _first_header(self) -> rb.BatchHeader | None:
        if self.size < rb.HEADER_SIZE:
            return None
        return rb.read_header(os.pread(self.file().fileno(), rb.HEADER_SIZE, 0))

    def _observe_timestamp(self, max_timestamp: int, last_offset: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset

    def _index_batch(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        self._observe_timestamp(max_timestamp, last_offset)
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    # --- append ----------------------------------------------------------------------------------------

    def should_roll(self, params: RollParams) -> bool:
        """Kafka `LogSegment.shouldRoll`: a non-empty segment rolls when the append would overflow
        `segment.bytes`, when its time span exceeds `segment.ms`, when its offset index is full, or when
        offsets would overflow the 4-byte relative offset. The span is measured in record time, from the first
        batch's timestamp to the incoming batch's newest one (so old-timestamped data does not roll on every
        append); only segments without a usable timestamp fall back to wall-clock age since creation."""
        if self.size == 0:
            return False
        if self.rolling_timestamp is not None and self.rolling_timestamp >= 0:
            waited_ms = params.max_timestamp_in_messages - self.rolling_timestamp
        else:
            waited_ms = params.now_ms - self.created_ms
        return (
            self.size > params.max_segment_bytes - params.messages_size
            or waited_ms > params.max_segment_ms
            or len(self.offset_index) >= params.max_index_entries
            or params.last_offset_in_messages - self.base_offset > MAX_RELATIVE_OFFSET
        )

    def append(self, buf: memoryview, batches: list[StoredBatch], next_offset: int) -> None:
        """Write `buf` (the batches, offsets assigned) at the end of the `.log` and index them.
        On an I/O error the file is cut back to its previous size and the error propagates."""
        file = self.file()
        physical = self.size
        try:
            written = 0
            while written < len(buf):
                written += file.write(buf[written:])
        except OSError:
            try:
                os.ftruncate(file.fileno(), physical)
            finally:
                raise
        for stored in batches:
            self._index_batch(physical + stored.position, stored.size, stored.last_offset, stored.max_timestamp)
        if self.rolling_timestamp is None and batches:
            self.rolling_timestamp = batches[0].max_timestamp
        self.size = physical + len(buf)
        self.next_offset = next_offset

    # --- read ------------------------------------------------------------------------------------------

    def find_batch(self, offset: int) -> tuple[int, rb.BatchHeader] | None:
        """The position and header of the first batch whose last offset is >= `offset`, or None."""
        if self.size < rb.HEADER_SIZE:
            return None
        fd = self.file().fileno()
        _, position = self.offset_index.lookup(offset)
        while self.size - position >= rb.HEADER_SIZE:
            header = rb.read_header(os.pread(fd, rb.HEADER_SIZE, position))
            if header.last_offset >= offset:
                return position, header
            position += header.size
        return None

    def position_of(self, offset: int) -> int:
        """Byte position where the batches holding offsets >= `offset` begin (`size` if none)."""
        found = self.find_batch(offset)
        return found[0] if found else self.size

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `start_offset` whose timestamp is
        >= `timestamp` (Kafka `LogSegment.findOffsetByTimestamp`); None if this segment has none.
        Batch headers are scanned from the time index's hint; only the matching batch is decoded."""
        if self.max_timestamp < timestamp:
            return None
        fd = self.file().fileno()
        _, position = self.offset_index.lookup(max(self.time_index.lookup(timestamp), start_offset))
        while self.size - position >= rb.HEADER_SIZE:
            header = rb.read_header(os.pread(fd, rb.HEADER_SIZE, position))
            if header.max_timestamp >= timestamp and header.last_offset >= start_offset:
                data = memoryview(os.pread(fd, header.size, position))
                for record in rb.iter_records(data, header):
                    offset = header.base_offset + record.offset_delta
                    record_timestamp = rb.record_timestamp(header, record)
                    if offset >= start_offset and record_timestamp >= timestamp:
                        return offset, record_timestamp
            position += header.size
        return None

    def record_with_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record holding this segment's largest timestamp (Kafka
        `RecordBatch.offsetOfMaxTimestamp` on the batch that holds it); None if the segment has none."""
        if self.max_timestamp == rb.NO_TIMESTAMP:
            return None
        found = self.find_batch(self.offset_of_max_timestamp)
        if found is None:
            return None
        position, header = found
        data = memoryview(os.pread(self.file().fileno(), header.size, position))
        for record in rb.iter_records(data, header):
            if rb.record_timestamp(header, record) == header.max_timestamp:
                return header.base_offset + record.offset_delta, header.max_timestamp
        return None

    def last_modified_ms(self) -> int:
        return int(self.log_path.stat().st_mtime * 1000)

    def read_range(self, position: int, length: int) -> bytes:
        return os.pread(self.file().fileno(), length, position)

    def batches(self) -> Iterator[tuple[int, rb.BatchHeader, memoryview]]:
        """Every batch of the segment, in order. An empty segment's file is not opened (a new replica's
        producer-state scan costs no file handle)."""
        if self.size == 0:
            return iter(())
        return scan_batches(self.file(), 0, self.size)

    # --- recovery and truncation -----------------------------------------------------------------------

    def recover(self, on_batch: Callable[[rb.BatchHeader], None] | None = None) -> int:
        """Re-validate every batch, rebuild the indexes, and truncate at the first invalid byte; `on_batch` sees
        each valid batch's header. Returns the number of bytes truncated. An empty file is not even opened."""
        if self.log_path.stat().st_size == 0:
            self.size = 0
            self._load_tail_state()
            return 0
        file = self.file()
        file_size = os.fstat(file.fileno()).st_size
        self._reset_state()
        valid_end = 0
        for position, header, data in scan_batches(file, 0, file_size):
            try:
                rb.validate_header(header)
                rb.verify_crc(data, 0, header)
            except BrokerError:
                break
            if header.base_offset < self.next_offset or header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                break
            self._index_batch(position, header.size, header.last_offset, header.max_timestamp)
            if self.rolling_timestamp is None:
                self.rolling_timestamp = header.max_timestamp
            self.next_offset = header.next_offset
            valid_end = position + header.size
            if on_batch is not None:
                on_batch(header)
        if valid_end < file_size:
            os.ftruncate(file.fileno(), valid_end)
        self.size = valid_end
        return file_size - valid_end

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from trusted `.log` bytes (a missing or insane index file)."""
        self._reset_state()
        for position, header, _ in scan_batches(self.file(), 0, self.size):
            self._index_batch(position, header.size, header.last_offset, header.max_timestamp)
            if self.rolling_timestamp is None:
                self.rolling_timestamp = header.max_timestamp
            self.next_offset = header.next_offset

    def _reset_state(self) -> None:
        self._offset_index = OffsetIndex(self.index_path, self.base_offset)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset)
        self._bytes_since_last_index_entry = 0
        self.next_offset = self.base_offset
        self.max_timestamp = rb.NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_timestamp = None

    def truncate_to(self, offset: int) -> int:
        """Remove the batches holding offsets >= `offset` (whole batches: the cut is at the start of the
        batch containing `offset`). Returns the bytes removed."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        os.ftruncate(self.file().fileno(), position)
        self.size = position
        self.offset_index.truncate_to(found[1].base_offset)
        self.time_index.truncate_to(found[1].base_offset)
        self._load_tail_state()
        return removed

    # --- durability and deletion -----------------------------------------------------------------------

    def write_indexes(self) -> None:
        """Write pending index entries to their files (page cache only). A fresh segment's indexes are
        written (empty, replacing whatever the files held) only once it holds data."""
        if self._fresh and self.size > 0:
            self._load_indexes()
        if self._offset_index is not None:
            self._offset_index.flush(fsync=False)
        if self._time_index is not None:
            self._time_index.flush(fsync=False)

    def fsync(self, file: SegmentFile) -> None:
        """fsync `file` (this segment's `.log`, taken under the log lock) and the index files as
        written by the last `write_indexes`. Safe without the log lock: it only syncs inodes, and an
        index renamed away meanwhile is skipped."""
        os.fsync(file.fileno())
        for path in (self.index_path, self.time_index_path):
            fsync_file(path)

    def promote(self) -> None:
        """Rename this compacted copy's `*.cleaned` files over the final names (log first). An empty copy
        has no index files: they are rebuilt when loaded (nothing to index)."""
        self.write_indexes()
        self._handles.forget(self.log_path)
        for source, target in zip((self.log_path, self.index_path, self.time_index_path), self._paths(""),
                                  strict=True):
            try:
                os.replace(source, target)
            except FileNotFoundError:
                if source == self.log_path:
                    raise
        self._suffix = ""
        self.log_path = self._paths("")[0]
        if self._offset_index is not None:
            self._offset_index.path = self.index_path
            self._time_index.path = self.time_index_path  # type: ignore[union-attr]

    def discard(self) -> None:
        """Delete this (unpromoted) copy's files."""
        self.deleted = True
        self._handles.forget(self.log_path)
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)

    def largest_timestamp(self) -> int:
        """What `retention.ms` compares with: the largest record timestamp, or the file's mtime if the
        segment has none (Kafka `LogSegment.largestTimestamp`)."""
        if self.max_timestamp != rb.NO_TIMESTAMP:
            return self.max_timestamp
        return self.last_modified_ms()

    def rename_to_deleted(self) -> list[Path]:
        """Mark the segment gone: rename its files to `*.deleted` (unlinked later, after
        `file.delete.delay.ms`). Returns the renamed paths."""
        self.deleted = True
        self._handles.forget(self.log_path)
        renamed = []
        for path in (self.log_path, self.index_path, self.time_index_path):
            target = path.with_name(path.name + DELETED_SUFFIX)
            try:
                os.replace(path, target)
            except FileNotFoundError:
                continue
            renamed.append(target)
        return renamed
