"""How soon a metadata long poll wakes after another process commits a change, and what the waiting costs
while nothing changes (issue 17: the version watcher, `controlplane.cluster.version_watch`).

`.venv/bin/python -m bench.metadata_wake`: a fresh SQLite database in a temporary directory, or with
`BENCH_WAKE_POSTGRES=postgres://user@host:port/db` a fresh database `strom_bench_wake` on that server (dropped and
created here); both migrated here. A thread of this process long-polls as the brokers' requests do
(`metadata.wait_for_version(v + 1, …)` in a loop); a second process commits `BENCH_WAKE_COMMITS` (200) metadata
changes (`metadata.bump` under `locked_state()`), one every 20–60 ms (uniformly random, so a poller's phase is
too), each stamped with `time.monotonic()` (CLOCK_MONOTONIC, shared by the processes) when its commit returned.
Prints the wake's delay after that stamp (p50, p99, max; on PostgreSQL the notification can arrive just before the
committer's stamp: a delay below zero), then, with the thread still waiting and nothing committed for
`BENCH_WAKE_IDLE_S` (10), the CPU this process spent per second (its watcher; the waiting thread sleeps) and on
PostgreSQL the server's (its postmaster and children, from /proc: 10 ms ticks); last, the median wall time of a
pure-Python task (~20 ms of CPU) in another thread, before the waiting starts and beside it: what the watcher's
turns at the GIL cost a request thread.
Runs on any tree that has `metadata.wait_for_version` (before/after: a `git archive` of main with this module
copied in, run with PYTHONPATH=<tree>:<tree>/platform; the tree it ran on is printed).
"""

import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

COMMITS = int(os.environ.get("BENCH_WAKE_COMMITS", "200"))
IDLE_S = float(os.environ.get("BENCH_WAKE_IDLE_S", "10"))
POSTGRES = os.environ.get("BENCH_WAKE_POSTGRES")
DATABASE = "strom_bench_wake"
GAP_S = (0.02, 0.06)
TASK_RUNS = 50
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def setup_django(var_dir: str) -> None:
    os.environ["STROM_VAR_DIR"] = var_dir
    os.environ["DJANGO_SETTINGS_MODULE"] = "controlplane.settings"
    if POSTGRES:
        import psycopg

        server_url = POSTGRES.rsplit("/", 1)[0]
        with psycopg.connect(f"{server_url}/postgres", autocommit=True) as server:
            server.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
            server.execute(f"CREATE DATABASE {DATABASE}")
        os.environ["DATABASE_URL"] = f"{server_url}/{DATABASE}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(var_dir) / 'strom.sqlite3'}"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def committer() -> None:
    """The second process: a metadata change per line read; writes `<version> <monotonic after commit>`."""
    import django

    django.setup()
    from django.db import transaction

    from controlplane.cluster import metadata

    for _ in sys.stdin:
        with transaction.atomic():
            version = metadata.bump(metadata.locked_state())
        print(version, time.monotonic(), flush=True)


class Waiter:
    """A long poll, always waiting for the next version: `woken[v]` is when a wait returned version `v`."""

    def __init__(self, version: int) -> None:
        self.woken: dict[int, float] = {}
        self._next = version + 1
        self._changed = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from django.db import connection

        from controlplane.cluster import metadata

        try:
            while not self._stop:
                version = metadata.wait_for_version(self._next, 30_000)
                with self._changed:
                    self.woken[version] = time.monotonic()
                    self._changed.notify_all()
                self._next = version + 1
        finally:
            connection.close()

    def woken_at(self, version: int, timeout_s: float = 10.0) -> float:
        with self._changed:
            if not self._changed.wait_for(lambda: version in self.woken, timeout_s):
                raise RuntimeError(f"no wake for version {version} within {timeout_s} s")
            return self.woken[version]

    def stop(self, committer: subprocess.Popen) -> None:
        self._stop = True
        committer.stdin.write("bump\n")  # one more change ends the last wait
        committer.stdin.flush()
        self._thread.join(10)


def postgres_server_pid() -> int:
    """The postmaster of the server the metadata store is on (the parent of this process's session)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    return int(_stat(Path(f"/proc/{backend}/stat"))[1])


def _stat(path: Path) -> list[str]:
    """/proc/<pid>/stat's fields after the command name: state, ppid, … (utime and stime at 11 and 12)."""
    text = path.read_text()
    return text[text.rindex(")") + 2:].split()


def postgres_cpu_s(postmaster: int) -> float:
    """User + system CPU seconds so far of the server: `postmaster` and its children (sessions, workers)."""
    total = 0
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = _stat(path)
        except OSError:  # ended meanwhile
            continue
        if path.parent.name == str(postmaster) or fields[1] == str(postmaster):
            total += int(fields[11]) + int(fields[12])
    return total * TICK_S


def task_wall_ms(runs: int = TASK_RUNS) -> float:
    """Median wall time of a pure-Python task of ~20 ms of CPU in this (the main) thread: what a request thread
    of the web process loses to the watcher's turns at the GIL."""
    walls = []
    for _ in range(runs):
        began = time.perf_counter()
        sum(i * i for i in range(400_000))
        walls.append((time.perf_counter() - began) * 1000)
    return statistics.median(walls)


def main() -> None:
    with tempfile.TemporaryDirectory() as var_dir:
        setup_django(var_dir)
        import controlplane
        from controlplane.cluster import metadata

        tree = Path(controlplane.__file__).resolve().parents[2]
        print(f"tree {tree}; {'PostgreSQL' if POSTGRES else 'SQLite'}; {COMMITS} commits by another process, "
              f"{GAP_S[0] * 1000:.0f}-{GAP_S[1] * 1000:.0f} ms apart")
        child = subprocess.Popen([sys.executable, "-m", "bench.metadata_wake", "commit"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=os.environ)
        try:
            task_alone = task_wall_ms()
            waiter = Waiter(metadata.current_version())
            delays = []
            for _ in range(COMMITS):
                time.sleep(random.uniform(*GAP_S))
                child.stdin.write("bump\n")
                child.stdin.flush()
                version, committed_at = child.stdout.readline().split()
                delays.append((waiter.woken_at(int(version)) - float(committed_at)) * 1000)
            server = postgres_server_pid() if POSTGRES else None
            cpu, server_cpu, began = time.process_time(), server and postgres_cpu_s(server), time.monotonic()
            time.sleep(IDLE_S)  # the waiter waits; nothing commits
            elapsed = time.monotonic() - began
            cpu, server_cpu = time.process_time() - cpu, server and postgres_cpu_s(server) - server_cpu
            task_beside = task_wall_ms()
            waiter.stop(child)
        finally:
            child.stdin.close()
            child.wait(30)
        quantiles = statistics.quantiles(delays, n=100, method="inclusive")
        print(f"  wake after commit: p50 {statistics.median(delays):6.2f} ms, p99 {quantiles[98]:6.2f} ms, "
              f"max {max(delays):6.2f} ms")
        print(f"  idle {elapsed:.1f} s with a waiter: this process {cpu / elapsed * 1000:6.2f} ms CPU/s"
              + (f", PostgreSQL server {server_cpu / elapsed * 1000:6.2f} ms CPU/s" if POSTGRES else ""))
        print(f"  a pure-Python task in another thread, median of {TASK_RUNS}: {task_alone:6.2f} ms alone, "
              f"{task_beside:6.2f} ms beside the waiting")


if __name__ == "__main__":
    committer() if sys.argv[1:] == ["commit"] else main()
