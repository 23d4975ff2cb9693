"""Checkpoint files, in Kafka's text formats, always replaced atomically.

`write_atomically`: write `<name>.tmp`, fsync it, rename over `<name>`, fsync the directory. A crash
leaves either the old or the new file, never a torn one (a stale `.tmp` is ignored and overwritten).

Offset checkpoints (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`cleaner-offset-checkpoint`, `replication-offset-checkpoint`, one per log dir; Kafka `OffsetCheckpointFile`)::

    0                      version
    2                      number of entries
    orders 0 1234          topic partition offset
    orders 1 17

The leader-epoch checkpoint (`leader-epoch-checkpoint`, one per partition directory) has the same
framing with `epoch start_offset` lines. A file that does not parse is treated as missing (the caller
falls back to a full recovery), never trusted partially.

`OffsetCheckpointFile` rewrites an offset checkpoint only when its content changed since this process last
wrote it durably (maintenance passes every second would otherwise rewrite and fsync files of one line per
partition for nothing), and keeps the mapping and its lines so that a caller updates only the changed entries.
Entries are written in the order they were added (the format does not order them; readers build a mapping).
"""

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

VERSION = 0


def write_atomically(path: Path, data: bytes, sync_directory: bool = True, sync: bool = True) -> None:
    """Without `sync_directory` the rename is durable only once the caller fsyncs the directory; without `sync`
    nothing is fsynced (the caller fsyncs the file and its directory before relying on it)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync and sync_directory:
        fsync_dir(path.parent)


def fsync_file(path: Path) -> None:
    """fsync the file now at `path` (a no-op if there is none)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _header(entries: int) -> str:
    """The version and entry-count lines every checkpoint file starts with."""
    return f"{VERSION}\n{entries}\n"


def _write_lines(path: Path, lines: list[str], sync: bool = True) -> None:
    write_atomically(path, (_header(len(lines)) + "".join(f"{line}\n" for line in lines)).encode(), sync=sync)


def _read_lines(path: Path, fields: int) -> list[list[str]] | None:
    """Entry lines split into `fields` parts; None if missing or malformed."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    try:
        if int(lines[0]) != VERSION or int(lines[1]) != len(lines) - 2:
            raise ValueError("bad header")
        entries = [line.split() for line in lines[2:]]
        if any(len(entry) != fields for entry in entries):
            raise ValueError("bad entry")
        return entries
    except (ValueError, IndexError):
        logger.warning("ignoring malformed checkpoint file %s", path)
        return None


class OffsetCheckpointFile:
    """One offset checkpoint file, written only when its content changed: either given a whole mapping
    (`write`) or kept as a mapping updated entry by entry (`set`, `discard`) and written by `write_if_changed`,
    so that a caller tracking which entries changed never rebuilds or compares the whole mapping.

    Invariant: `_durable` is True only while the file durably holds exactly `_offsets` — written, the file and
    its directory fsynced, by this object, with no entry changed since — and False when that is not known
    (nothing written yet in this process, the last write failed at any step, or an entry changed). A write is
    skipped only while `_durable` holds, so a skip never leaves the file behind any value (no offset goes
    backwards, and a partition added or removed is a change), and a failed write is retried by the next call.
    The file is not trusted as read at startup: a rename not yet made durable by the directory fsync could
    still be undone by a crash, so the first write of a process always writes.

    Not thread-safe: one writer (the log maintenance pass, or shutdown after it stopped).
    """

    __slots__ = ("path", "_offsets", "_lines", "_durable")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: dict[tuple[str, int], int] = {}
        self._lines: dict[tuple[str, int], str] = {}
        """Each entry's line as written, kept with it, so that a write joins lines instead of formatting every
        entry (entries in the order they were added: the format does not order them)."""
        self._durable = False

    def set(self, partition: tuple[str, int], offset: int) -> None:
        if self._offsets.get(partition) != offset:
            self._offsets[partition] = offset
            self._lines[partition] = f"{partition[0]} {partition[1]} {offset}\n"
            self._durable = False

    def discard(self, partition: tuple[str, int]) -> None:
        if self._offsets.pop(partition, None) is not None:
            del self._lines[partition]
            self._durable = False

    def write_if_changed(self) -> bool:
        """Write the mapping atomically and durably unless the file already holds exactly it; True if written.
        Raises what the write raises (OSError), the file then counting as changed."""
        if self._durable:
            return False
        write_atomically(self.path, (_header(len(self._lines)) + "".join(self._lines.values())).encode())
        self._durable = True
        return True

    def write(self, offsets: Mapping[tuple[str, int], int]) -> bool:
        """Write exactly `offsets` unless the file already holds exactly them; True if written."""
        for partition in self._offsets.keys() - offsets.keys():
            self.discard(partition)
        for partition, offset in offsets.items():
            self.set(partition, offset)
        return self.write_if_changed()


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset; empty if the file is missing or malformed."""
    try:
        return {(topic, int(p)): int(o) for topic, p, o in _read_lines(path, 3) or []}
    except ValueError:
        logger.warning("ignoring malformed checkpoint file %s", path)
        return {}


def write_epochs(path: Path, entries: Iterable[tuple[int, int]], sync: bool = True) -> None:
    _write_lines(path, [f"{epoch} {start_offset}" for epoch, start_offset in entries], sync)


def read_epochs(path: Path) -> list[tuple[int, int]]:
    """[(epoch, start_offset)]; empty if the file is missing or malformed."""
    try:
        return [(int(e), int(o)) for e, o in _read_lines(path, 2) or []]
    except ValueError:
        logger.warning("ignoring malformed checkpoint file %s", path)
        return []
