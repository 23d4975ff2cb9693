"""`FileHandleCache`: a bounded LRU of open segment files shared by every log of a `LogManager`.

Segments do not own file handles: they ask the cache, which opens `<base>.log` on demand
(`O_RDWR | O_APPEND`: appends go to the end, reads use explicit positions) and keeps at most
`max_open` files referenced. Evicting a file only drops the cache's reference; the file closes when the
last holder lets go. A `FileRegion` handed to the network layer holds its file, so it stays readable
while it is being sent even if the cache evicts it or retention unlinks the segment meanwhile.

Thread-safe (a lock around the LRU): the event loop and the maintenance thread both use it.
"""

import io
import threading
from collections import OrderedDict
from pathlib import Path


class SegmentFile(io.FileIO):
    """A segment's `.log`, opened read/append. Closed when unreferenced, without a ResourceWarning:
    being closed by reference counting is this object's designed lifetime (see the module doc)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "a+")

    def __del__(self) -> None:
        self.close()


class FileHandleCache:
    def __init__(self, max_open: int) -> None:
        if max_open < 1:
            raise ValueError("max_open must be at least 1")
        self.max_open = max_open
        self._files: OrderedDict[Path, SegmentFile] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path) -> SegmentFile:
        """The open file for `path` (created if missing), most recently used."""
        with self._lock:
            file = self._files.get(path)
            if file is not None:
                self._files.move_to_end(path)
                return file
            file = SegmentFile(path)
            self._files[path] = file
            if len(self._files) > self.max_open:
                self._files.popitem(last=False)
            return file

    def forget(self, path: Path) -> None:
        """Drop the cached file of `path` (renamed, replaced or deleted)."""
        with self._lock:
            self._files.pop(path, None)

    def clear(self) -> None:
        with self._lock:
            self._files.clear()

    def __len__(self) -> int:
        return len(self._files)
