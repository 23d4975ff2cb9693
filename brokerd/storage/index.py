"""`FixedWidthIndex`: the base of the sparse segment indexes (`.index`, `.timeindex`).

An index is a sorted list of `(key, value)` pairs held in memory as two `array('q')` and mirrored in a
file of fixed-width big-endian entries (the subclass's `ENTRY`). Entries are appended in memory on the
append path (one per `index.interval.bytes` of log, so about 0.2 % of the log's size) and written to the
file by `flush`, which the segment calls on roll, flush and close. Nothing on the append path touches
the index file, and no file handle stays open.

Crash behaviour (as Kafka's `OffsetIndex`/`TimeIndex`): the files carry no checksum. After an unclean
shutdown the log rebuilds the indexes of every segment it recovers; any other index that fails
`sanity_check` when loaded (size not a multiple of the entry, keys not increasing, entries beyond the
log) or is missing is rebuilt from its `.log`.

Lookups are `bisect` over the in-memory keys. Not thread-safe: the owning segment serialises access.
"""

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

from brokerd.storage.errors import CorruptIndexError


class FixedWidthIndex:
    ENTRY: struct.Struct
    """File entry layout; set by the subclass."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._keys = array("q")
        self._values = array("q")
        self._persisted = 0
        """Entries already in the file; entries past it are written by the next `flush`."""
        self._rewrite = True
        """The file must be rewritten from scratch (new, truncated or rebuilt index)."""

    def _encode(self, key: int, value: int) -> tuple[int, int]:
        """(key, value) in memory -> the two fields of a file entry."""
        raise NotImplementedError

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        """The two fields of a file entry -> (key, value) in memory."""
        raise NotImplementedError

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless the loaded entries are plausible for a log of `log_size` bytes."""
        raise NotImplementedError

    @classmethod
    def load(cls, path: Path, base_offset: int, log_size: int) -> "FixedWidthIndex":
        """Read and sanity-check an index file. FileNotFoundError and CorruptIndexError tell the caller
        to rebuild it."""
        index = cls(path, base_offset)
        data = path.read_bytes()
        if len(data) % cls.ENTRY.size:
            raise CorruptIndexError(f"{path}: {len(data)} bytes is not a whole number of entries")
        for first, second in cls.ENTRY.iter_unpack(data):
            key, value = index._decode(first, second)
            index._keys.append(key)
            index._values.append(value)
        index.sanity_check(log_size)
        index._persisted = len(index._keys)
        index._rewrite = False
        return index

    def __len__(self) -> int:
        return len(self._keys)

    def entry(self, i: int) -> tuple[int, int]:
        return self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def floor(self, key: int) -> tuple[int, int] | None:
        """The entry with the greatest key <= `key`, or None."""
        i = bisect_right(self._keys, key) - 1
        return (self._keys[i], self._values[i]) if i >= 0 else None

    def _append(self, key: int, value: int) -> None:
        self._keys.append(key)
        self._values.append(value)

    def truncate_entries(self, count: int) -> None:
        """Keep only the first `count` entries."""
        if count < len(self._keys):
            del self._keys[count:]
            del self._values[count:]
            if count < self._persisted:
                self._persisted = count
                self._rewrite = True

    def flush(self, fsync: bool) -> None:
        """Write the entries not yet in the file (all of them after a rewrite), then maybe fsync."""
        if self._persisted == len(self._keys) and not self._rewrite:
            return
        start = 0 if self._rewrite else self._persisted
        data = b"".join(
            self.ENTRY.pack(*self._encode(self._keys[i], self._values[i])) for i in range(start, len(self._keys))
        )
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if self._rewrite else os.O_APPEND)
        fd = os.open(self.path, flags, 0o644)
        try:
            os.write(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._persisted = len(self._keys)
        self._rewrite = False


def check_increasing(keys: array, strictly: bool, path: Path) -> None:
    """Raise CorruptIndexError unless `keys` increase (strictly or not)."""
    for i in range(1, len(keys)):
        if keys[i] < keys[i - 1] or (strictly and keys[i] == keys[i - 1]):
            raise CorruptIndexError(f"{path}: entry {i} is out of order")
