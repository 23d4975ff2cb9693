"""What survives a restart, behind one interface the control plane implements with its ORM: the
evaluation state (windows, head rings and the collector's positions in `__consumer_offsets`, as one
opaque blob) and the open incidents. With both restored, a restarted monitor evaluates full windows at
once (not blind for `intervals` commits) and announces nothing it had announced already.

`MemoryStore` is for tests; `FileStore` keeps both in a directory (atomic replace: write a temporary
file, fsync, rename), for `python -m monitoring`.
"""

import json
import os
import tempfile
import threading
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from monitoring.model import Status
from monitoring.notifier.incidents import EVERYONE, Announced, Incident, IncidentStore

STATE_FORMAT = 1


class StateStore(Protocol):
    def load_state(self) -> bytes | None:
        """The last saved blob, None if none."""

    def save_state(self, state: bytes) -> None:
        """Replace the saved blob (atomically: a crash keeps the old or the new one)."""


class MonitorStore(IncidentStore, StateStore, Protocol):
    """Everything the monitor persists."""


def encode_state(storage_snapshot: Mapping, positions: Mapping[int, int]) -> bytes:
    """The blob: zlib-compressed compact JSON of the storage snapshot and `__consumer_offsets` positions."""
    document = {"format": STATE_FORMAT, "storage": storage_snapshot,
                "positions": {str(p): o for p, o in positions.items()}}
    return zlib.compress(json.dumps(document, separators=(",", ":")).encode(), 1)


def decode_state(blob: bytes) -> tuple[dict, dict[int, int]]:
    """(storage snapshot, positions) from `encode_state`'s blob; ValueError for anything else."""
    try:
        document = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError) as exc:
        raise ValueError(f"unreadable monitor state: {exc}") from exc
    if document.get("format") != STATE_FORMAT:
        raise ValueError(f"monitor state format {document.get('format')!r}, expected {STATE_FORMAT}")
    return document["storage"], {int(p): o for p, o in document["positions"].items()}


def incident_to_dict(incident: Incident) -> dict:
    return {"id": incident.id, "cluster": incident.cluster, "group": incident.group, "start_ms": incident.start_ms,
            "status": incident.status.name, "notified": notified_to_dict(incident.notified)}


def incident_from_dict(data: Mapping) -> Incident:
    """Also reads the format before per-subscriber announcements (`notified_status`, `notified_ms`: what
    the monitor's one policy, `EVERYONE`, was told)."""
    if data.get("notified_status"):
        notified = {EVERYONE: Announced(Status[data["notified_status"]], data.get("notified_ms", 0))}
    else:
        notified = notified_from_dict(data.get("notified") or {})
    return Incident(id=data["id"], cluster=data["cluster"], group=data["group"], start_ms=data["start_ms"],
                    status=Status[data["status"]], notified=notified)


def notified_to_dict(notified: Mapping[str, Announced]) -> dict[str, list]:
    """{subscriber: [status name, ms]}: what each subscriber was last told, as JSON."""
    return {key: [told.status.name, told.at_ms] for key, told in notified.items()}


def notified_from_dict(data: Mapping[str, Sequence]) -> dict[str, Announced]:
    return {key: Announced(Status[status], at_ms) for key, (status, at_ms) in data.items()}


class MemoryStore:
    def __init__(self) -> None:
        self.state: bytes | None = None
        self.incidents: dict[str, Incident] = {}
        self.closed: list[tuple[Incident, int]] = []

    def load_state(self) -> bytes | None:
        return self.state

    def save_state(self, state: bytes) -> None:
        self.state = state

    def open_incidents(self) -> list[Incident]:
        return list(self.incidents.values())

    def update_incidents(self, saved: Sequence[Incident], closed: Sequence[tuple[Incident, int]]) -> None:
        self.incidents.update((incident.id, incident) for incident in saved)
        for incident, closed_ms in closed:
            self.incidents.pop(incident.id, None)
            self.closed.append((incident, closed_ms))


class FileStore:
    """`state.bin` (the blob) and `incidents.json` (open incidents) in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        path = self.directory / "incidents.json"
        saved = json.loads(path.read_text()) if path.exists() else []
        self._incidents = {d["id"]: incident_from_dict(d) for d in saved}

    def load_state(self) -> bytes | None:
        path = self.directory / "state.bin"
        return path.read_bytes() if path.exists() else None

    def save_state(self, state: bytes) -> None:
        self._replace("state.bin", state)

    def open_incidents(self) -> list[Incident]:
        with self._lock:
            return list(self._incidents.values())

    def update_incidents(self, saved: Sequence[Incident], closed: Sequence[tuple[Incident, int]]) -> None:
        """The file is rewritten once per call (so once per evaluation round)."""
        with self._lock:
            self._incidents.update((incident.id, incident) for incident in saved)
            for incident, _closed_ms in closed:
                self._incidents.pop(incident.id, None)
            self._write_incidents()

    def _write_incidents(self) -> None:
        self._replace("incidents.json", json.dumps([incident_to_dict(i) for i in self._incidents.values()]).encode())

    def _replace(self, name: str, data: bytes) -> None:
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.directory / name)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
