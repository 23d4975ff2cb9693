"""How long one AlterPartition batch holds SQLite's write lock (issue 17: heartbeats and the controller's lease
queue behind it).

`.venv/bin/python -m bench.alter_partition_lock`: a fresh SQLite database in a temporary directory (migrated here),
3 registered brokers, `BENCH_ALTER_PARTITIONS` (10,000) partitions in topics of 10, RF 3. Broker 1 then proposes,
in one `services.alter_partitions` call each, `BENCH_ALTER_BATCH` (3,000) of the partitions it leads: first a
shrink (its last follower leaves the ISR), then the expansion back; `BENCH_ALTER_REPEATS` (3) rounds. Per call it
prints the whole call's wall time and the write transaction's, from `BEGIN IMMEDIATE` until its commit
returned (`WriteLockClock`): the time every other writer — a heartbeat, a lease renewal — can wait. Also
under a busy GIL (`BENCH_ALTER_BUSY_THREADS`, 2 threads spinning in Python), as in the web process, whose
other request threads take turns with the one holding the lock.
"""

import os
import statistics
import tempfile
import threading
import time

from bench.metadata import grow_to, setup_django

PARTITIONS = int(os.environ.get("BENCH_ALTER_PARTITIONS", "10000"))
BATCH = int(os.environ.get("BENCH_ALTER_BATCH", "3000"))
REPEATS = int(os.environ.get("BENCH_ALTER_REPEATS", "3"))
BUSY_THREADS = int(os.environ.get("BENCH_ALTER_BUSY_THREADS", "2"))


class WriteLockClock:
    """The write transactions of one connection, in seconds: from its `BEGIN` (an execute wrapper) until its
    commit returns. (SQLite's trace callback would also see every statement the triggers run, each a call
    into Python that waits for the GIL: it slowed what it measured.)"""

    def __init__(self, connection) -> None:
        self.transactions: list[float] = []
        self._began: float | None = None
        connection.execute_wrappers.append(self._execute)
        commit = connection._commit

        def timed_commit():
            commit()
            if self._began is not None:
                self.transactions.append(time.perf_counter() - self._began)
                self._began = None

        connection._commit = timed_commit

    def _execute(self, execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("BEGIN"):
            self._began = time.perf_counter()
        return execute(sql, params, many, context)


def one_round(broker_epoch: int, clock: WriteLockClock) -> list[tuple[str, float, float]]:
    from controlplane.cluster import services
    from controlplane.topics.models import Partition

    led = list(Partition.objects.filter(leader=1).order_by("id").values_list(
        "topic__name", "partition", "leader_epoch", "partition_epoch", "isr")[:BATCH])
    figures = []
    for name, isr_of in (("shrink", lambda isr: [1] + [b for b in isr if b != 1][:-1]),
                         ("expand", lambda isr: [1, 2, 3])):
        changes = [services.IsrChange(t, p, le, pe, tuple(isr_of(isr))) for t, p, le, pe, isr in led]
        clock.transactions.clear()
        began = time.perf_counter()
        results = services.alter_partitions(1, broker_epoch, changes)
        wall = time.perf_counter() - began
        assert all(r["error"] is None for r in results), {r["error"] for r in results}
        figures.append((name, wall, max(clock.transactions)))
        led = [(t, p, r["leader_epoch"], r["partition_epoch"], r["isr"]) for (t, p, *_), r in zip(led, results,
                                                                                                    strict=True)]
    return figures


def spin(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(1000))


def main() -> None:
    with tempfile.TemporaryDirectory() as var_dir:
        setup_django(var_dir)
        from django.db import connection

        from controlplane.cluster import services

        epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9091 + b}", None, [])["registration_epoch"]
                  for b in (1, 2, 3)}
        grow_to(PARTITIONS)
        clock = WriteLockClock(connection)
        print(f"{PARTITIONS} partitions, batches of {BATCH}; seconds (median of {REPEATS}) whole call / "
              "write transaction")
        for busy in (0, BUSY_THREADS):
            stop = threading.Event()
            spinners = [threading.Thread(target=spin, args=(stop,), daemon=True) for _ in range(busy)]
            for thread in spinners:
                thread.start()
            rounds = [one_round(epochs[1], clock) for _ in range(REPEATS)]
            stop.set()
            for thread in spinners:
                thread.join()
            for index, name in enumerate(("shrink", "expand")):
                wall = statistics.median(r[index][1] for r in rounds)
                locked = statistics.median(r[index][2] for r in rounds)
                print(f"  {name:6} busy threads {busy}: call {wall:.3f} s, write transaction {locked:.3f} s")


if __name__ == "__main__":
    main()
