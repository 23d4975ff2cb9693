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
partition for nothing).
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


def _write_lines(path: Path, lines: list[str], sync: bool = True) -> None:
    write_atomically(path, "".join(f"{line}\n" for line in [str(VERSION), str(len(lines)), *lines]).encode(),
                     sync=sync)


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


def write_offsets(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    _write_lines(path, [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())])


class OffsetCheckpointFile:
    """One offset checkpoint file, written (`write_offsets`) only when its content changed.

    Invariant: `_durable` is the mapping the file is known to hold durably — written, the file and its
    directory fsynced, by this object — or None when that is not known (nothing written yet in this process,
    or the last write failed at any step). `write` skips a mapping only when it equals `_durable`, so a skip
    never leaves the file behind any value (no offset goes backwards, and a partition added or removed is a
    different mapping), and a failed write is retried by the next call. The file is not trusted as read at
    startup: a rename not yet made durable by the directory fsync could still be undone by a crash, so the
    first `write` of a process always writes.

    Not thread-safe: one writer (the log maintenance pass, or shutdown after it stopped).
    """

    __slots__ = ("path", "_durable")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._durable: dict[tuple[str, int], int] | None = None

    def write(self, offsets: Mapping[tuple[str, int], int]) -> bool:
        """Write `offsets` atomically and durably unless the file already holds exactly them; True if written.
        Raises what the write raises (OSError), remembering nothing."""
        offsets = dict(offsets)
        if offsets == self._durable:
            return False
        self._durable = None
        write_offsets(self.path, offsets)
        self._durable = offsets
        return True


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
