"""`LogDirectory`: one entry of `log.dirs` and the single funnel for its I/O errors.

Every storage operation that touches a disk runs inside `log_dir.io_guard()` (Kafka's
`maybeHandleIOException` + `LogDirFailureChannel`): an `OSError` marks the whole directory offline and
surfaces as `KafkaStorageError`; while the directory is offline every operation on its logs fails fast
with `KafkaStorageError`. A directory never comes back online in-process (Kafka needs a restart too).

Thread-safe: `online` is a plain flag, set once.
"""

import logging
from pathlib import Path

from brokerd.storage.errors import KafkaStorageError

logger = logging.getLogger(__name__)


class LogDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.online = True
        self.failure: OSError | None = None

    def mark_offline(self, error: OSError) -> None:
        if self.online:
            logger.error("log dir %s is offline after an I/O error: %s", self.path, error)
            self.failure = error
            self.online = False

    def io_guard(self) -> "_IOGuard":
        """Context manager: fail fast if offline; turn OSError into offline + KafkaStorageError."""
        return _IOGuard(self)

    def __repr__(self) -> str:
        return f"LogDirectory({str(self.path)!r}, online={self.online})"


class _IOGuard:
    __slots__ = ("_log_dir",)

    def __init__(self, log_dir: LogDirectory) -> None:
        self._log_dir = log_dir

    def __enter__(self) -> None:
        if not self._log_dir.online:
            raise KafkaStorageError(f"log dir {self._log_dir.path} is offline")

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is not None and isinstance(exc, OSError):
            self._log_dir.mark_offline(exc)
            raise KafkaStorageError(f"I/O error in log dir {self._log_dir.path}: {exc}") from exc
        return False
