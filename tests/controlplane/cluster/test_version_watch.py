"""The process's one metadata version watcher (`version_watch`), on the database the pass runs on (both: `make
test` runs these in its PostgreSQL and SQLite passes): long polls woken by a commit of another process or
connection — on PostgreSQL by its NOTIFY, the safety re-read being put an hour away —, one thread for every
waiter that ends when the last leaves, and a database error (on PostgreSQL: the watcher's session terminated)
that loses no waiter.

Real transactions on separate connections, so `transaction=True`; waiters are threads calling
`metadata.wait_for_version` as the long-poll views do, synchronised by polling conditions (the watcher thread
runs, its session is listed), never by sleeps.
"""

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import OperationalError, connection, transaction

from controlplane.cluster import metadata, version_watch
from tests.support.controlplane import REPO_ROOT
from tests.support.polling import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sqlite_pass]

ON_POSTGRES = connection.vendor == "postgresql"
WAIT_MS = 20_000
WOKEN_WITHIN_S = 15.0
"""A waiter woken by a change returns within this (its wait is 20 s; the safety re-read an hour away)."""

BUMP_SCRIPT = """
import django
django.setup()
from django.db import transaction
from controlplane.cluster import metadata
with transaction.atomic():
    print(metadata.bump(metadata.locked_state()))
"""


def watcher_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "metadata-version-watcher"]


def watcher_sessions() -> list[int]:
    """PostgreSQL: the process ids of the watcher's sessions."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                       [version_watch.APPLICATION_NAME])
        return [pid for (pid,) in cursor.fetchall()]


@pytest.fixture(autouse=True)
def watcher(monkeypatch) -> None:
    """No watcher left from an earlier test; the safety re-read an hour away (only a commit wakes a waiter)."""
    wait_until(lambda: not watcher_threads(), timeout_s=10, message="an earlier test's watcher to end")
    monkeypatch.setattr(version_watch, "SAFETY_READ_S", 3600.0)


def start_waiters(count: int, min_version: int, wait_ms: int = WAIT_MS) -> tuple[list[threading.Thread], dict]:
    """`count` threads each long-polling for `min_version`; returns them and {thread name: version returned}."""
    returned: dict[str, int] = {}

    def wait() -> None:
        try:
            returned[threading.current_thread().name] = metadata.wait_for_version(min_version, wait_ms)
        finally:
            connection.close()

    waiters = [threading.Thread(target=wait, name=f"waiter-{i}") for i in range(count)]
    for waiter in waiters:
        waiter.start()
    wait_until(watcher_threads, timeout_s=10, message="the watcher to start")
    return waiters, returned


def joined(waiters: list[threading.Thread], timeout_s: float = WOKEN_WITHIN_S) -> bool:
    """Whether every waiter returned within `timeout_s` (in all)."""
    deadline = time.monotonic() + timeout_s
    for waiter in waiters:
        waiter.join(max(0.0, deadline - time.monotonic()))
    return not any(waiter.is_alive() for waiter in waiters)


def bump_here() -> int:
    with transaction.atomic():
        return metadata.bump(metadata.locked_state())


def bump_in_another_process() -> int:
    """Commit a metadata change from a new Python process on the test database."""
    db = connection.settings_dict
    url = (f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}" if ON_POSTGRES
           else f"sqlite:///{db['NAME']}")
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "controlplane.settings"}
    done = subprocess.run([sys.executable, "-c", BUMP_SCRIPT], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.parametrize("bump", [bump_in_another_process, bump_here], ids=["another process", "this process"])
def test_waiters_are_woken_by_a_commit(bump: Callable[[], int]):
    target = metadata.current_version() + 1
    waiters, returned = start_waiters(3, target)
    assert len(watcher_threads()) == 1  # one watcher serves them all
    assert not joined(waiters, 0.3), "a waiter returned although nothing changed"
    assert bump() == target
    assert joined(waiters), "the waiters were not woken by the commit"
    assert sorted(returned.values()) == [target] * 3


def test_the_watcher_ends_when_the_last_waiter_leaves():
    waiters, returned = start_waiters(2, metadata.current_version() + 1, wait_ms=500)
    if ON_POSTGRES:
        wait_until(watcher_sessions, timeout_s=10, message="the watcher's session")
    assert joined(waiters) and len(returned) == 2  # both ended at their deadline
    wait_until(lambda: not watcher_threads(), timeout_s=10, message="the watcher to end")
    if ON_POSTGRES:
        wait_until(lambda: not watcher_sessions(), timeout_s=10, message="the watcher's session to close")


def test_a_failed_version_read_loses_no_waiter(monkeypatch):
    failures = []
    read = version_watch.current_version

    def first_read_fails() -> int:
        if not failures:
            failures.append(threading.current_thread())
            raise OperationalError("the database went away")
        return read()

    monkeypatch.setattr(version_watch, "current_version", first_read_fails)
    target = metadata.current_version() + 1
    waiters, returned = start_waiters(2, target)
    wait_until(lambda: failures and watcher_threads() and watcher_threads()[0] is not failures[0], timeout_s=10,
               message="a second watcher after the first one's failure")
    assert bump_here() == target
    assert joined(waiters), "the waiters were not woken by the commit after the failure"
    assert sorted(returned.values()) == [target] * 2


@pytest.mark.skipif(ON_POSTGRES or sys.platform != "linux", reason="the SQLite watcher's inotify watch (Linux)")
def test_sqlite_waiters_are_woken_by_the_kernels_report_of_the_write(monkeypatch):
    monkeypatch.setattr(version_watch, "SQLITE_STEP_S", 3600.0)  # no polling: only the report wakes the watcher
    monkeypatch.setattr(version_watch, "EXIT_CHECK_S", 3600.0)
    target = metadata.current_version() + 1
    waiters, returned = start_waiters(2, target)
    assert bump_in_another_process() == target
    assert joined(waiters), "the waiters were not woken by the commit"
    assert sorted(returned.values()) == [target] * 2
    bump_here()  # the watcher, waiting an hour for the next report, sees its waiters gone and ends
    wait_until(lambda: not watcher_threads(), timeout_s=10, message="the watcher to end")


@pytest.mark.skipif(ON_POSTGRES or sys.platform != "linux", reason="the SQLite watcher's inotify watch (Linux)")
def test_a_sqlite_commit_visible_after_its_reported_write_wakes_the_waiters(monkeypatch):
    """A commit's last write (the one the kernel reports) precedes its visibility: here each new `data_version`
    is hidden for `version_watch.SETTLE_S / 4` after the watcher first reads it, as if the writer were descheduled
    between its write and its `-shm` mark, and no later write is reported."""
    monkeypatch.setattr(version_watch, "SQLITE_STEP_S", 3600.0)
    monkeypatch.setattr(version_watch, "EXIT_CHECK_S", 3600.0)
    hidden_for_s = version_watch.SETTLE_S / 4
    read = version_watch._SQLiteCommits._data_version
    first_read_at: dict[int, float] = {}

    def visible_late(commits) -> int:
        value, seen = read(commits), getattr(commits, "_seen", None)  # None: the first read, in its constructor
        if seen is None or value == seen:
            return value
        at = first_read_at.setdefault(value, time.monotonic())
        return value if time.monotonic() - at >= hidden_for_s else seen

    monkeypatch.setattr(version_watch._SQLiteCommits, "_data_version", visible_late)
    target = metadata.current_version() + 1
    waiters, returned = start_waiters(2, target)
    assert bump_in_another_process() == target
    assert joined(waiters), "the waiters were not woken by a commit that became visible after its report"
    assert sorted(returned.values()) == [target] * 2
    assert first_read_at, "the watcher never read the hidden data_version"
    bump_here()
    wait_until(lambda: not watcher_threads(), timeout_s=10, message="the watcher to end")


@pytest.mark.skipif(ON_POSTGRES or sys.platform != "linux", reason="the SQLite watcher's inotify watch (Linux)")
def test_the_sqlite_watcher_sleeps_between_commits(tmp_path):
    """Also while another file of the database's directory is written (as the liveness database is at every
    heartbeat): each write wakes the watcher once, no re-reads for a commit becoming visible follow."""
    sibling = Path(connection.settings_dict["NAME"]).with_name(f"{tmp_path.name}-sibling")
    waiters, _ = start_waiters(1, metadata.current_version() + 1, wait_ms=1500)
    (watcher,) = watcher_threads()
    before = voluntary_switches(watcher.native_id)
    try:
        with sibling.open("ab") as writes:
            for _ in range(10):  # over the 1 s window observed (sleeps here pace the writes, not synchronise)
                writes.write(b"x")
                writes.flush()
                time.sleep(0.1)
    finally:
        sibling.unlink(missing_ok=True)
    woken = voluntary_switches(watcher.native_id) - before
    # each EXIT_CHECK_S (20 in 1 s) and each write (10); polling every 2 ms woke it ~500 times, re-reading for
    # 20 ms every 0.5 ms after each write ~400
    assert woken < 60, woken
    assert joined(waiters)


def voluntary_switches(thread_id: int) -> int:
    status = Path(f"/proc/self/task/{thread_id}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("voluntary_ctxt_switches")).split()[1])


@pytest.mark.skipif(not ON_POSTGRES, reason="the watcher's LISTEN session (PostgreSQL)")
def test_a_terminated_listening_session_is_replaced():
    target = metadata.current_version() + 1
    waiters, returned = start_waiters(2, target)
    (first,) = wait_until(watcher_sessions, timeout_s=10, message="the watcher's session")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    wait_until(lambda: watcher_sessions() and first not in watcher_sessions(), timeout_s=10,
               message="a new watcher session")
    assert bump_here() == target
    assert joined(waiters), "the waiters were not woken by the commit after the session's loss"
    assert sorted(returned.values()) == [target] * 2
