"""Waking the long polls of a process when the metadata version moves: the process's one version watcher.

Changes are committed by other processes (the controller, other web workers, management commands) as often as by
this one, so a waiter cannot be signalled in-process. While any request waits, one thread per process watches the
database and wakes the waiters whose version has come, so N held long polls cost one watcher, not N:

- PostgreSQL: `announce()` (called by `metadata.bump()`) sends a NOTIFY on `CHANNEL` in the change's transaction,
  delivered when it commits; the watcher LISTENs on its own connection (application name `APPLICATION_NAME`) and
  reads the version when a notification arrives. No query runs between changes but a safety re-read every
  `SAFETY_READ_S`.
- SQLite (no notifications): the watcher reads `PRAGMA data_version` on its own connection (it changes whenever
  another connection commits to the file; a few µs, no query plan, no table read) when the kernel reports a write
  to a file of the database's directory (inotify: a commit writes the write-ahead log, or the database file outside
  WAL mode), and at least every `EXIT_CHECK_S`; it reads the version only when `data_version` changed. A commit's
  last reported write comes just before the commit is visible (SQLite then marks it in the `-shm` index through a
  memory map, which the kernel does not report), so after a report with `data_version` unchanged it re-reads every
  `SETTLE_STEP_S` for up to `SETTLE_S` before sleeping until the next report (of the database's own files only:
  others in its directory, such as the liveness database written at every heartbeat, wake it but are read past).
  Where inotify is missing (not Linux, the watch limit reached) it reads `data_version` every `SQLITE_STEP_S`
  instead — 500 wake-ups a second in every web process, the cost the notifications save.

Invariants: at most one watcher thread per process, running while any waiter waits; it ends (closing its
connection) within `EXIT_CHECK_S` of the last waiter leaving. A database error ends it too (logged): a waiter still
waiting starts the next one (a new connection, LISTEN again) `RETRY_S` later, so a failing database is retried,
never spun on, and no waiter is lost; commits made while no watcher ran are seen by the next one's first read.
"""

import logging
import os
import select
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import inotify_simple
from django.db import connection, transaction

from .models import ControllerState

__all__ = ("CHANNEL", "announce", "current_version", "wait")

CHANNEL = "strom_metadata_version"
APPLICATION_NAME = "strom-metadata-version-watcher"
SQLITE_STEP_S = 0.002
SETTLE_S = 0.02
SETTLE_STEP_S = 0.0005
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
    each version read, so a commit after the read changes it). The directory is watched before the first read, so
    a commit after it is either seen by that read or reported by the kernel."""

    WRITES = inotify_simple.flags.MODIFY | inotify_simple.flags.CREATE | inotify_simple.flags.MOVED_TO

    def __init__(self) -> None:
        path = os.path.abspath(connection.settings_dict["NAME"])
        self._writes = self._watch_directory(os.path.dirname(path))
        name = os.path.basename(path)
        self._files = {name, f"{name}-wal", f"{name}-journal"}
        """The database's own files: a report of another file of its directory (the liveness database beside it,
        written at every heartbeat) is read past."""
        connection.ensure_connection()
        self._raw = connection.connection
        self._seen = self._data_version()

    @staticmethod
    def _watch_directory(directory: str) -> inotify_simple.INotify | None:
        """The kernel's reports of writes to files of `directory`, or None where it gives none (then: polling)."""
        writes = None
        try:
            writes = inotify_simple.INotify()
            writes.add_watch(directory, _SQLiteCommits.WRITES)
        except (OSError, AttributeError) as exc:  # not Linux (no such call), the per-user inotify limits reached
            if writes is not None:
                writes.close()
            logger.debug("No inotify watch on %s (%s): the version watcher polls every %.3f s", directory, exc,
                         SQLITE_STEP_S)
            return None
        return writes

    def close(self) -> None:
        if self._writes is not None:
            self._writes.close()

    def _data_version(self) -> int:
        return self._raw.execute("PRAGMA data_version").fetchone()[0]

    def read_version(self) -> int:
        self._seen = self._data_version()
        return current_version()

    def wait(self, timeout: float) -> bool:
        """Whether another connection committed within `timeout` seconds (checked at each write the kernel reports
        in the database's directory, then every `SETTLE_STEP_S` for `SETTLE_S` after a report of its own files —
        the window between a commit's last reported write and its visibility —, or every `SQLITE_STEP_S` without
        inotify)."""
        deadline = time.monotonic() + timeout
        settling_until = 0.0
        while self._data_version() == self._seen:
            now = time.monotonic()
            if now >= deadline:
                return False
            if self._writes is None:
                time.sleep(min(SQLITE_STEP_S, deadline - now))
            elif now < settling_until:
                time.sleep(min(SETTLE_STEP_S, settling_until - now, deadline - now))
            elif any(report.name in self._files  # the reports taken: each wakes once
                     for report in self._writes.read(timeout=max(1, round((deadline - now) * 1000)))):
                settling_until = time.monotonic() + SETTLE_S
        return True


@contextmanager
def _commits() -> Iterator[_PostgresCommits | _SQLiteCommits]:
    """This thread's own connection, watching for commits; closed (with the SQLite watch) on exit."""
    with ExitStack() as closing:
        closing.callback(connection.close)
        if connection.vendor == "postgresql":
            yield _PostgresCommits()
        else:
            commits = _SQLiteCommits()
            closing.callback(commits.close)
            yield commits


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
