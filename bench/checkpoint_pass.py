"""What log maintenance's checkpoint pass costs a broker at scale (issue 17: idle brokers at 100,000 partitions used
~38 % of a core; the pass runs every second on the maintenance thread, whose Python holds the interpreter lock the
event loop needs).

A `LogManager` with `BENCH_CHECKPOINT_LOGS` empty logs (default 100,000, one log dir, created in one batch as a
metadata image brings them) and its four checkpoint files written once. Printed: CPU ms of one checkpoint pass
(`write_checkpoints`, median of `BENCH_CHECKPOINT_REPEATS`, 5) when nothing changed (an idle broker), when one log's
high watermark moved (a broker with one busy partition), and when every log's did (setting them — what the
replication layer's appends pay — and the pass apart); and of one whole idle maintenance pass (`run_maintenance`, its
retention interval not up). Run under quiet-bench on main and on a branch (`git
archive` a tree into /tmp):

    .venv/bin/python -m bench.checkpoint_pass
"""

import os
import statistics
import tempfile
import time
from pathlib import Path

from brokerd.storage import LogManager
from brokerd.storage.log_manager import NewLog

LOGS = int(os.environ.get("BENCH_CHECKPOINT_LOGS", "100000"))
REPEATS = int(os.environ.get("BENCH_CHECKPOINT_REPEATS", "5"))
PARTITIONS_PER_TOPIC = 10


def cpu_ms(action) -> float:
    """Median CPU ms of `action()` over REPEATS runs (this thread's CPU: the pass runs on one thread)."""
    samples = []
    for _ in range(REPEATS):
        start = time.thread_time()
        action()
        samples.append((time.thread_time() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as directory:
        manager = LogManager([Path(directory)])
        manager.startup()
        started = time.perf_counter()
        manager.create_logs([NewLog(f"t{i // PARTITIONS_PER_TOPIC:06d}", i % PARTITIONS_PER_TOPIC)
                             for i in range(LOGS)])
        print(f"{LOGS} logs created in {time.perf_counter() - started:.1f} s")
        logs = [log for _, log in manager.logs()]
        manager.write_checkpoints()
        manager.run_maintenance(int(time.time() * 1000))  # the first pass checks retention on every log
        busy = logs[len(logs) // 2]
        counter = iter(range(1, 1 << 30))

        def one_moved() -> None:
            busy.high_watermark = next(counter)  # as the replication layer moves it; no record behind it
            manager.write_checkpoints()

        def move_all() -> None:
            offset = next(counter)
            for log in logs:
                log.high_watermark = offset

        def all_moved() -> None:
            move_all()
            start = time.thread_time()
            manager.write_checkpoints()
            pass_only.append((time.thread_time() - start) * 1000)

        pass_only: list[float] = []

        figures = {
            "checkpoint pass, nothing changed": cpu_ms(manager.write_checkpoints),
            "checkpoint pass, one high watermark moved": cpu_ms(one_moved),
            "every log's high watermark set (as appends to every partition would)": cpu_ms(move_all),
            "every high watermark moved: setting them, then a checkpoint pass": cpu_ms(all_moved),
            "every high watermark moved: the checkpoint pass alone": statistics.median(pass_only),
            "whole maintenance pass, idle": cpu_ms(lambda: manager.run_maintenance(int(time.time() * 1000))),
        }
        for what, ms in figures.items():
            print(f"{what}: {ms:.2f} ms CPU")
        manager.shutdown()


if __name__ == "__main__":
    main()
