"""Waking the long polls of a process when the metadata version moves: the process's one version watcher.

Changes are committed by other processes (the controller, other web workers, management commands) as often as by
this one, so a waiter cannot be signalled in-process. While any request waits, one thread per process watches the
database and wakes the waiters whose version has come, so N held long polls cost one watcher, not N:

- PostgreSQL: `announce()` (called by `metadata.bump()`) sends a NOTIFY on `CHANNEL` in the change's transaction,
  delivered when it commits; the watcher LISTENs on its own connection (application name `APPLICATION_NAME`) and
  reads the version when a notification arrives. No query runs between changes but a safety re-read every
  `SAFETY_READ_S`.
- SQLite (no notifications): every `SQLITE_STEP_S` the watcher reads `PRAGMA data_version` on its own connection
  (it changes whenever another connection commits to the file; a few µs, no query plan, no table read) and reads
  the version only when it changed.

Invariants: at most one watcher thread per process, running while any waiter waits; it ends (closing its
connection) within `EXIT_CHECK_S` of the last waiter leaving. A database error ends it too (logged): a waiter still
waiting starts the next one (a new connection, LISTEN again) `RETRY_S` later, so a failing database is retried,
never spun on, and no waiter is lost; commits made while no watcher ran are seen by the next one's first read.
"""

import logging
import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from .models import ControllerState

__all__ = ("CHANNEL", "announce", "current_version", "wait")

CHANNEL = "strom_metadata_version"
APPLICATION_NAME = "strom-metadata-version-watcher"
SQLITE_STEP_S = 0.002
SAFETY_READ_S = 1.0
EXIT_CHECK_S = 0.05
RETRY_S = 0.1

logger = logging.getLogger(__name__)


def current_version() -> int:
    return ControllerState.objects.filter(singleton=True).values_list("metadata_version", flat=True).first() or 0


def announce(version: int) -> None:
    """Tell every process's watcher that `version` is committed: on PostgreSQL a NOTIFY in the caller's
    transaction (sent at its commit, dropped at its rollback); on SQLite nothing (watchers see the commit)."""
    db = transaction.get_connection()
    if db.vendor == "postgresql":
        with db.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, str(version)])


class _PostgresCommits:
    """Commits announced on `CHANNEL`, heard on this thread's connection (LISTEN before the first read, so no
    commit falls between the read and the listening)."""

    def __init__(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SET application_name = %s", [APPLICATION_NAME])
            cursor.execute(f"LISTEN {CHANNEL}")

    def read_version(self) -> int:
        return current_version()

    def wait(self, timeout: float) -> bool:
        """Whether a commit was announced within `timeout` seconds (returns at the first).

        Notifications that came with a query's answer wait in psycopg's backlog, not on the socket, so that is
        drained first. (psycopg's own `notifies(timeout=…)` busy-polls with a short timeout: 15 ms CPU/s at
        50 ms; waiting on the socket here costs a select per timeout.)
        """
        raw = connection.connection
        if self._heard(raw):
            return True
        select.select([raw.fileno()], [], [], timeout)
        return self._heard(raw)

    @staticmethod
    def _heard(raw) -> bool:
        """Whether notifications arrived (all taken): the backlog, then what the socket holds, without waiting."""
        return bool(list(raw.notifies(timeout=0)))


class _SQLiteCommits:
    """Commits by other connections, seen as changes of this connection's `PRAGMA data_version` (read before
    each version read, so a commit after the read changes it)."""

    def __init__(self) -> None:
        connection.ensure_connection()
        self._raw = connection.connection
        self._seen = self._data_version()

    def _data_version(self) -> int:
        return self._raw.execute("PRAGMA data_version").fetchone()[0]

    def read_version(self) -> int:
        self._seen = self._data_version()
        return current_version()

    def wait(self, timeout: float) -> bool:
        """Whether another connection committed within `timeout` seconds (checked every `SQLITE_STEP_S`)."""
        deadline = time.monotonic() + timeout
        while self._data_version() == self._seen:
            if time.monotonic() >= deadline:
                return False
            time.sleep(SQLITE_STEP_S)
        return True


@contextmanager
def _commits() -> Iterator[_PostgresCommits | _SQLiteCommits]:
    """This thread's own connection, watching for commits; closed on exit."""
    try:
        yield _PostgresCommits() if connection.vendor == "postgresql" else _SQLiteCommits()
    finally:
        connection.close()


class _VersionWatcher:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiters = 0
        self._version: int | None = None  # last read; None until the running watcher's first read
        self._running = False

    def wait(self, min_version: int, deadline: float) -> int | None:
        """The version once it is >= `min_version`, or the last seen at `deadline` (None if none yet)."""
        with self._changed:
            self._waiters += 1
            try:
                while (self._version is None or self._version < min_version) and time.monotonic() < deadline:
                    if not self._running:  # none yet, or the last one failed (a database error)
                        self._running = True
                        threading.Thread(target=self._watch, name="metadata-version-watcher", daemon=True).start()
                    self._changed.wait(deadline - time.monotonic())
                return self._version
            finally:
                self._waiters -= 1

    def _watch(self) -> None:
        try:
            with _commits() as commits:
                committed, read_at = True, 0.0
                while True:
                    if committed or time.monotonic() - read_at >= SAFETY_READ_S:
                        read_at = time.monotonic()
                        version = commits.read_version()
                        with self._changed:
                            if version != self._version:
                                self._version = version
                                self._changed.notify_all()
                    with self._changed:
                        if self._waiters == 0:
                            self._stopped()
                            return
                    committed = commits.wait(EXIT_CHECK_S)
        except Exception:
            logger.warning("The metadata version watcher failed; a waiter starts another in %.1f s", RETRY_S,
                           exc_info=True)
            time.sleep(RETRY_S)  # a failing database: retried by the next watcher, not at once
            with self._changed:
                self._stopped()
                self._changed.notify_all()

    def _stopped(self) -> None:
        """Mark the watcher ended (holding `_changed`): its version is forgotten, as nothing keeps it current."""
        self._running = False
        self._version = None


_watcher = _VersionWatcher()


def wait(min_version: int, deadline: float) -> int | None:
    """Block until the process's watcher has read a version >= `min_version` (returned) or until `deadline`
    (`time.monotonic()` seconds; the last version read is returned, None if none yet)."""
    return _watcher.wait(min_version, deadline)
