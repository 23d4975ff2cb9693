"""How long an idle broker's periodic work holds its event loop at scale (issue 17: "a broker hosting 100,000
replicas never holds its loop for more than ~50 ms in steady state").

Broker 1 of 3 with `BENCH_IDLE_PARTITIONS` partitions (default 100,000; RF 3, a third led here, two thirds followed),
no network and no disk: the replicas are `Partition`s over an idle stand-in log (offsets all 0), the two followers
each hold a fetch session of every led partition at the log end (caught up), and each fetches idly the way
`handlers.fetch` serves an incremental fetch (`_with_session_news`, then the session's long poll) every
`BENCH_IDLE_FETCH_WAIT_MS` (500, Kafka's `replica.fetch.wait.max.ms`). The replica manager's real periodic task
(`_isr_loop`: the ISR check, the sessions' sweep) runs for `BENCH_IDLE_SECONDS` (6) with `replica.lag.time.max.ms` =
`BENCH_IDLE_LAG_MS` (2,000: every led partition comes due a few times within the run; Kafka's default is 30,000).

Printed: every loop step (callback or task step) that held the loop `BENCH_IDLE_REPORT_MS` (5) or more, grouped by
what it was (`brokerd.slow_callbacks`: wall time net of waiting for a CPU), with the longest, and the process CPU
per second of the run. Run under quiet-bench, on main and on the branch (`git archive` a tree into /tmp):

    .venv/bin/python -m bench.idle_loop_holds
"""

import asyncio
import gc
import logging
import os
import time
import types
from collections import defaultdict

from bench.replica_roles import _image, _Images
from brokerd import slow_callbacks
from brokerd.metadata.image import ClusterImage
from brokerd.replication.config import ReplicationConfig
from brokerd.replication.partition import Partition
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.server.handlers import fetch


class _IdleLog:
    """What a `Partition` reads of an idle, empty log."""

    log_start_offset = log_end_offset = high_watermark = 0
    leader_epoch_cache = types.SimpleNamespace(assign=lambda epoch, offset: None)

    def tail_batch_headers(self, _max_bytes: int) -> tuple:
        return ()


class _Holds(logging.Handler):
    """The slow-callback lines: milliseconds held, by what held the loop."""

    def __init__(self) -> None:
        super().__init__()
        self.by_what: dict[str, list[float]] = defaultdict(list)

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("slow callback: garbage"):
            self.by_what["garbage collection"].append(record.args[2])
        else:
            self.by_what[record.args[0].split(" at ")[0]].append(record.args[1])


def _replica_manager(image: ClusterImage, lag_ms: int) -> ReplicaManager:
    replicas = ReplicaManager(None, _Images(image), 1,  # type: ignore[arg-type]
                              config=ReplicationConfig(replica_lag_time_max_ms=lag_ms), metrics_enabled=False)
    now = replicas._clock.monotonic_ms()
    for name, topic in image.topics.items():
        for assignment in topic.partitions:
            partition = Partition(name, assignment.partition, 1, _IdleLog(), replicas)  # type: ignore[arg-type]
            if assignment.leader_id == 1:
                partition.make_leader(assignment, now)
            else:
                partition.make_follower(assignment)
            replicas._partitions[partition.key] = partition
    return replicas


def _open_sessions(replicas: ReplicaManager) -> None:
    """Both followers' fetch sessions of every led partition, caught up and quiet."""
    requested = [(p.topic, [types.SimpleNamespace(partition=p.index, fetch_offset=0, current_leader_epoch=1,
                                                  partition_max_bytes=1 << 20, last_fetched_epoch=1)])
                 for p in replicas.partitions() if p.is_leader]
    for follower in (2, 3):
        session = replicas.fetch_sessions.create(follower)
        session.update(requested, ())
        for cached in session.partitions.values():
            cached.sent_high_watermark = cached.sent_log_start_offset = 0
        session.changed.clear()


async def _idle_follower(replicas: ReplicaManager, image: ClusterImage, follower: int, wait_ms: int) -> None:
    """An idle follower's incremental fetches, served as `handlers.fetch` serves them."""
    context = types.SimpleNamespace(services=types.SimpleNamespace(replicas=replicas,
                                                                   metadata=types.SimpleNamespace(image=image)))
    session = replicas.fetch_sessions._by_replica[follower]
    while True:
        replicas.record_session_fetch(session)
        session.watch()
        await fetch._with_session_news(context, session, [], follower, True)
        await session.wait_for_change(wait_ms / 1000)


async def _run(partitions: int, seconds: float, lag_ms: int, wait_ms: int, report_ms: float) -> None:
    image = _image(partitions, epoch=1)
    replicas = _replica_manager(image, lag_ms)
    _open_sessions(replicas)
    gc.collect()
    gc.freeze()  # as `Broker.start` does once the replicas exist
    holds = _Holds()
    logging.getLogger("brokerd.slow_callbacks").addHandler(holds)
    logging.getLogger("brokerd.slow_callbacks").propagate = False
    uninstall = slow_callbacks.install(report_ms)
    tasks = [asyncio.create_task(replicas._isr_loop(), name="isr-check")]
    tasks += [asyncio.create_task(_idle_follower(replicas, image, f, wait_ms), name=f"fetch-{f}") for f in (2, 3)]
    cpu = time.process_time()
    await asyncio.sleep(seconds)
    cpu = time.process_time() - cpu
    uninstall()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    led = sum(p.is_leader for p in replicas.partitions())
    print(f"{partitions:,} partitions ({led:,} led), {seconds:.0f} s, replica.lag.time.max.ms {lag_ms:,}, "
          f"idle fetches every {wait_ms} ms; ISR shrinks proposed: "
          f"{sum(p.pending_isr is not None for p in replicas.partitions())}")
    print(f"CPU {1000 * cpu / seconds:.0f} ms per second of run")
    print(f"loop steps holding >= {report_ms:g} ms:")
    if not holds.by_what:
        print("  none")
    for what, held in sorted(holds.by_what.items(), key=lambda item: -max(item[1])):
        print(f"  {what}: {len(held)} steps, longest {max(held):.1f} ms, sum {sum(held):.0f} ms")


def main() -> None:
    asyncio.run(_run(int(os.environ.get("BENCH_IDLE_PARTITIONS", "100000")),
                     float(os.environ.get("BENCH_IDLE_SECONDS", "6")),
                     int(os.environ.get("BENCH_IDLE_LAG_MS", "2000")),
                     int(os.environ.get("BENCH_IDLE_FETCH_WAIT_MS", "500")),
                     float(os.environ.get("BENCH_IDLE_REPORT_MS", "5"))))


if __name__ == "__main__":
    main()
