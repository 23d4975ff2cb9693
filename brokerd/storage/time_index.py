"""`TimeIndex`: the sparse `<base_offset>.timeindex` of a segment: max timestamp so far -> offset.

File entry: 12 bytes, big-endian: timestamp int64 (ms; the largest batch maxTimestamp seen so far in the
segment) and relative offset int32 (offset of the batch holding that timestamp, minus base_offset).
Timestamps strictly increase: an entry is added only when the max timestamp grew (`maybe_append`).
`lookup(ts)` answers with the greatest entry whose timestamp <= ts: every record before its offset has
a smaller timestamp, so a timestamp search can start scanning there. See `index.FixedWidthIndex` for
persistence and crash behaviour.
"""

import struct
from bisect import bisect_left

from brokerd.storage.errors import CorruptIndexError
from brokerd.storage.index import FixedWidthIndex, check_increasing


class TimeIndex(FixedWidthIndex):
    ENTRY = struct.Struct(">qi")

    def _encode(self, key: int, value: int) -> tuple[int, int]:
        return key, value - self.base_offset

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        return first, self.base_offset + second

    def sanity_check(self, log_size: int) -> None:
        check_increasing(self._keys, strictly=True, path=self.path)
        check_increasing(self._values, strictly=False, path=self.path)
        if self._values and self._values[0] < self.base_offset:
            raise CorruptIndexError(f"{self.path}: entries before the segment")

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) if `timestamp` exceeds the last entry's."""
        if not self._keys or timestamp > self._keys[-1]:
            self._append(timestamp, offset)

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning from for the first record with a timestamp >= `timestamp`."""
        entry = self.floor(timestamp)
        return entry[1] if entry else self.base_offset

    def truncate_to(self, offset: int) -> None:
        """Drop the entries pointing at offsets >= `offset`."""
        self.truncate_entries(bisect_left(self._values, offset))
