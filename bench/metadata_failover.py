"""`make bench-metadata-failover`: what a surviving broker's event loop spends on the metadata change that fences
the broker leading a third of the partitions (issue 17), in one process, no cluster.

The control plane runs in this process on a fresh SQLite database (as `make bench-metadata`): 3 brokers, topics of
10 partitions RF 3 (`BENCH_METADATA_FAILOVER_PARTITIONS`, default 100,000), leaders spread. Broker 2's
`ClusterMetadataStore` and `ReplicaManager` (empty logs in a temporary directory, under /dev/shm when it exists)
host a replica of every partition. Then broker 1 is fenced as the controller does (`on_broker_gone` + bump: every
ISR loses it, a third of the partitions get a new leader), and broker 2's store catches up exactly as in a cluster:
`GET /metadata/changes?since=N` over HTTP from a server thread serving the control plane's body for it
(`changelog.catch_up`), decoded, applied to the image, and handed to the listeners (the replica manager's roles).
No other broker runs: the replica fetchers are not started, and the ISR check (a loop hold of its own) is off.

Printed: the body's size, each stage's time (HTTP + JSON decode, `apply_body`, the listeners), the loop steps while
the change was applied (a task yielding the loop between samples: their count, the longest and the sum, so garbage
collections and threads holding the GIL count too), and full collections. `BENCH_METADATA_FAILOVER_PROFILE=1`
adds cProfile's top functions for the whole catch-up.

    .venv/bin/python -m bench.metadata_failover
"""

import asyncio
import cProfile
import gc
import http.server
import io
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.metadata import REPO_ROOT, fence, grow_to, setup_django

PARTITIONS = int(os.environ.get("BENCH_METADATA_FAILOVER_PARTITIONS", "100000"))
PROFILE = os.environ.get("BENCH_METADATA_FAILOVER_PROFILE") == "1"
SURVIVOR = 2


class _Collections:
    """Garbage collections while installed: (generation, milliseconds) each."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], 1000 * (time.perf_counter() - self._started)))


def _serve(bodies: dict[str, bytes]) -> http.server.ThreadingHTTPServer:
    """An HTTP server on a thread answering `GET /internal/v1/metadata/changes?…` with `bodies[since or ""]`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            since = self.path.partition("since=")[2].partition("&")[0]
            body = bodies[since]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _LoopSteps:
    """A task sampling how long each loop step took (its own sleep(0) to the next wake-up)."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0)
            self.steps.append(1000 * (time.perf_counter() - started))

    def __enter__(self) -> "_LoopSteps":
        self._task = asyncio.get_running_loop().create_task(self._sample())
        return self

    def __exit__(self, *exc) -> None:
        assert self._task is not None
        self._task.cancel()


async def _broker(logs_dir: Path, url: str, first_version: int, victim: int) -> dict:
    from brokerd.clock import ManualClock
    from brokerd.metadata.cluster import ClusterMetadataStore, ClusterSettings
    from brokerd.replication.fetcher import ReplicaFetcher
    from brokerd.replication.replica_manager import ReplicaManager
    from brokerd.storage import LogManager

    logs = LogManager([logs_dir], {}, ManualClock())
    logs.startup()
    store = ClusterMetadataStore(ClusterSettings(url=url, secret="bench", broker_id=SURVIVOR,
                                                 listeners="PLAINTEXT://127.0.0.1:9093"))
    figures: dict = {}
    started = time.perf_counter()
    await store._refresh()  # the snapshot of `first_version`
    assert store.image.metadata_version == first_version
    ReplicaFetcher.start = lambda self: None  # no other broker: the fetchers stay idle
    replicas = ReplicaManager(logs, store, SURVIVOR, clock=ManualClock())
    replicas.start()
    replicas._isr_task.cancel()  # the ISR check's pass over every replica is another loop hold, not measured here
    while replicas._creating or replicas._creations:
        await asyncio.sleep(0.05)
    figures["setup_s"] = time.perf_counter() - started
    figures["replicas"] = len(replicas.partitions())
    led_before = sum(p.is_leader for p in replicas.partitions())
    gc.collect()
    gc.freeze()  # as a serving broker does at start: its replicas out of full collections
    collections = _Collections()
    gc.callbacks.append(collections)
    stages: dict[str, float] = {}
    cluster = sys.modules["brokerd.metadata.cluster"]
    timed = {name: getattr(cluster, name) for name in ("apply_body", "decode_yielding", "decode_body")
             if hasattr(cluster, name)}  # what this tree has (before: decoded by the HTTP client)
    for name, fn in timed.items():
        setattr(cluster, name, _timed(fn, stages, name))
    store._listeners[:] = [_timed(listener, stages, "listeners") for listener in store._listeners]
    profiler = cProfile.Profile() if PROFILE else None
    try:
        with _LoopSteps() as steps:
            await asyncio.sleep(0)
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            await store._refresh()  # the delta of the fence
            while replicas._creating or replicas._creations or getattr(replicas, "_queued", None):
                await asyncio.sleep(0)  # role slices still running (in a tree that has them)
            if profiler:
                profiler.disable()
            figures["catch_up_ms"] = 1000 * (time.perf_counter() - started)
            await asyncio.sleep(0)
    finally:
        gc.callbacks.remove(collections)
        for name, fn in timed.items():
            setattr(cluster, name, fn)
    assert not any(p.leader_id == victim for t in store.image.topics.values() for p in t.partitions)
    led = [p for p in replicas.partitions() if p.is_leader]
    assert all(victim not in p.isr for p in replicas.partitions())
    figures.update(stages, led_before=led_before, led_after=len(led), steps=len(steps.steps),
                   longest_step_ms=max(steps.steps), steps_sum_ms=sum(steps.steps),
                   steps_over_100ms=sum(s > 100 for s in steps.steps),
                   collections=[(g, round(ms)) for g, ms in collections.pauses if ms >= 20])
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        figures["profile"] = out.getvalue()
    await replicas.stop()
    store._client.close()
    logs.shutdown()
    return figures


def _timed(fn, stages: dict[str, float], name: str):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            stages[f"{name}_ms"] = stages.get(f"{name}_ms", 0.0) + 1000 * (time.perf_counter() - started)
    return wrapper


def main() -> int:
    sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "platform")]
    sys.setswitchinterval(0.001)  # as `python -m brokerd` sets it (SWITCH_INTERVAL_S)
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="strom-bench-failover-", dir=scratch) as var_dir:
        setup_django(var_dir)
        from controlplane.cluster import changelog, metadata, services

        for broker_id in (1, 2, 3):
            services.register_broker(broker_id, f"PLAINTEXT://127.0.0.1:{9091 + broker_id}", None, [])
        started = time.perf_counter()
        grow_to(PARTITIONS)
        first = metadata.current_version()
        bodies = {"": changelog.catch_up(None)}
        victim = 1
        fence(victim, batched=True)
        bodies[str(first)] = changelog.catch_up(first)
        print(f"control plane with {PARTITIONS:,} partitions and the fence's change: "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        server = _serve(bodies)
        try:
            figures = asyncio.run(_broker(Path(var_dir) / "logs", f"http://127.0.0.1:{server.server_port}", first,
                                          victim))
        finally:
            server.shutdown()
    print(f"\nmake bench-metadata-failover ({PARTITIONS:,} partitions RF 3; broker {SURVIVOR} hosting "
          f"{figures['replicas']:,} replicas catches up with broker {victim}'s fence; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print(f"  the fence's body: {len(bodies[str(first)]):,} bytes (snapshot {len(bodies['']):,})")
    stages = ", ".join(f"{name[:-3]} {figures[name]:.0f} ms" for name in (
        "decode_yielding_ms", "decode_body_ms", "apply_body_ms", "listeners_ms") if figures.get(name, 0) >= 0.5)
    print(f"  catch-up, request to every role applied: {figures['catch_up_ms']:.0f} ms ({stages}; the listeners' "
          f"queued slices, HTTP and decoding not listed are the rest)")
    print(f"  loop steps meanwhile: {figures['steps']}, longest {figures['longest_step_ms']:.0f} ms, "
          f"{figures['steps_over_100ms']} over 100 ms, sum {figures['steps_sum_ms']:.0f} ms")
    print(f"  leaderships here: {figures['led_before']:,} -> {figures['led_after']:,}; garbage collections of 20 ms "
          f"or more (generation, ms): {figures['collections']}")
    print(f"  (setup: {figures['setup_s']:.1f} s)")
    if "profile" in figures:
        print(figures["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
