"""Heartbeats while a metadata change holds SQLite's write lock (issue 17: at 100,000 partitions a fence's
election transaction holds it ~2.5 s, and live brokers missed their 2 s session waiting for it).

`.venv/bin/python -m bench.liveness_lock`: a fresh SQLite database in a temporary directory (migrated here), 3
registered brokers. Another connection holds the metadata store's write lock (`locked_state()` in an open
transaction) for `BENCH_LIVENESS_HOLD_MS` (2500) while 3 threads, one per broker, heartbeat every
`BENCH_LIVENESS_INTERVAL_MS` (250) through `services.heartbeat`, as the web process's request threads do. Prints,
per outcome (answered, or 503 after giving up on the lock), how many heartbeats and their wall time (median,
max), and the longest gap between two answered heartbeats of one broker, from the hold's start until two
intervals after it: what the session timeout sees. Runs on any tree that has `services.heartbeat`
(before/after: a `git archive` of main).
"""

import os
import statistics
import tempfile
import threading
import time

from bench.metadata import setup_django

HOLD_MS = int(os.environ.get("BENCH_LIVENESS_HOLD_MS", "2500"))
INTERVAL_MS = int(os.environ.get("BENCH_LIVENESS_INTERVAL_MS", "250"))
BROKERS = (1, 2, 3)


def hold_lock(held: threading.Event, seconds: float) -> None:
    from django.db import connection, transaction

    from controlplane.cluster import metadata

    try:
        with transaction.atomic():
            metadata.locked_state()
            held.set()
            time.sleep(seconds)  # the metadata change's work, holding the lock
    finally:
        connection.close()


def heartbeats(broker_id: int, epoch: int, until: float, results: list) -> None:
    """Heartbeat every interval until `until`: (outcome, wall seconds, monotonic time it returned) each."""
    from django.db import connection

    from controlplane.cluster import services
    from controlplane.core.errors import KafkaApiError

    try:
        while time.monotonic() < until:
            began = time.monotonic()
            try:
                services.heartbeat(broker_id, epoch)
                outcome = "answered"
            except KafkaApiError as e:
                outcome = f"{e.status} {e.error}"
            ended = time.monotonic()
            results.append((outcome, ended - began, ended))
            time.sleep(max(0.0, INTERVAL_MS / 1000 - (ended - began)))
    finally:
        connection.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as var_dir:
        setup_django(var_dir)
        from controlplane.cluster import services

        epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9091 + b}", None, [])["registration_epoch"]
                  for b in BROKERS}
        held = threading.Event()
        holder = threading.Thread(target=hold_lock, args=(held, HOLD_MS / 1000))
        holder.start()
        assert held.wait(10)
        started = time.monotonic()
        until = time.monotonic() + (HOLD_MS + 2 * INTERVAL_MS) / 1000  # and on a little after the release
        results: dict[int, list] = {b: [] for b in BROKERS}
        threads = [threading.Thread(target=heartbeats, args=(b, epochs[b], until, results[b])) for b in BROKERS]
        for thread in threads:
            thread.start()
        for thread in threads + [holder]:
            thread.join()
        print(f"metadata write lock held {HOLD_MS} ms; {len(BROKERS)} brokers heartbeating every {INTERVAL_MS} ms")
        every = [r for rs in results.values() for r in rs]
        for outcome in sorted({o for o, *_ in every}):
            walls = [wall * 1000 for o, wall, _ in every if o == outcome]
            print(f"  {outcome:28} {len(walls):3} heartbeats, wall median {statistics.median(walls):7.1f} ms, "
                  f"max {max(walls):7.1f} ms")
        gaps = []
        for rs in results.values():
            stamps = [ended for o, _, ended in rs if o == "answered"]
            gaps.append(max(b - a for a, b in zip([started, *stamps[:-1]], stamps, strict=True)) * 1000
                        if stamps else float("inf"))
        print(f"  longest gap between two answered heartbeats of one broker: {max(gaps):.0f} ms")


if __name__ == "__main__":
    main()
