"""`OffsetIndex`: the sparse `<base_offset>.index` of a segment: offset -> byte position in the `.log`.

File entry: 8 bytes, big-endian: relative offset int32 (offset - base_offset; with base 50, offset 55 is
stored as 5) and the file position int32 of the batch whose *last* offset is that offset (Kafka
`LogSegment.append` indexes `batch.lastOffset()` at the batch's position). Offsets strictly increase.
`lookup(target)` answers with the greatest indexed offset <= target: a reader starts scanning there.
See `index.FixedWidthIndex` for persistence and crash behaviour.
"""

import struct
from bisect import bisect_left

from brokerd.storage.errors import CorruptIndexError
from brokerd.storage.index import FixedWidthIndex, check_increasing


class OffsetIndex(FixedWidthIndex):
    ENTRY = struct.Struct(">ii")

    def _encode(self, key: int, value: int) -> tuple[int, int]:
        return key - self.base_offset, value

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        return self.base_offset + first, second

    def sanity_check(self, log_size: int) -> None:
        check_increasing(self._keys, strictly=True, path=self.path)
        check_increasing(self._values, strictly=False, path=self.path)
        if self._keys and (self._keys[0] < self.base_offset or self._values[-1] >= max(log_size, 1)):
            raise CorruptIndexError(f"{self.path}: entries outside the segment")

    def append(self, offset: int, position: int) -> None:
        self._append(offset, position)

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) to start scanning from for `target_offset`; (base_offset, 0) if none."""
        return self.floor(target_offset) or (self.base_offset, 0)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries for offsets >= `offset`."""
        self.truncate_entries(bisect_left(self._keys, offset))
