"""`make bench-metrics`: what broker metrics cost in broker CPU on the client benchmark's produce workload.

The same standalone broker runs the `make bench` workload (confluent-kafka, N x 1 KiB records into 8
partitions, then consumed) with metrics on and with `strom.metrics.enable=false` (nothing counted, served or
published), alternating, BENCH_METRICS_ROUNDS times each. "On" uses the defaults (a sample published to
`__strom_metrics` every 10 s) and a scraper reading `/metrics` every 15 s as Prometheus does. Printed: median
broker CPU-seconds per 1M records of each variant and the metrics' share; the hot-path hooks timed in-process
(per request and per batch); and the fixed cost of an idle broker's sampling and scrapes (CPU ms per minute,
independent of traffic). Target (issue 15): under 2 % of broker CPU on produce.

Environment: BENCH_RECORDS (default 1000000), BENCH_METRICS_ROUNDS (default 3), BENCH_METRICS_IDLE_S (60).
"""

import os
import statistics
import sys
import threading
import timeit
import urllib.request
from dataclasses import dataclass

from bench.clients import RECORD_BYTES, PhaseResult, kafka_phases
from bench.peers import free_port
from bench.peers.kafka_protocol import strom
from brokerd.counters import BrokerTopicMetrics, RequestMetrics, TopicCounters
from brokerd.protocol.api_keys import ApiKey

PARTITIONS = 8


SCRAPE_INTERVAL_S = 15.0


class Scraper(threading.Thread):
    """GET /metrics every `SCRAPE_INTERVAL_S` (and once at the start) until stopped, as Prometheus does."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.stopped = threading.Event()
        self.scrapes = 0

    def run(self) -> None:
        while True:
            with urllib.request.urlopen(self.url, timeout=10) as response:
                response.read()
            self.scrapes += 1
            if self.stopped.wait(SCRAPE_INTERVAL_S):
                return


def run_variant(with_metrics: bool, records: int) -> list[PhaseResult]:
    if not with_metrics:
        with strom({"strom.metrics.enable": "false"}) as peer:
            return kafka_phases(peer, PARTITIONS, records)
    port = free_port()
    with strom({"strom.metrics.port": str(port)}) as peer:
        scraper = Scraper(port)
        scraper.start()
        try:
            return kafka_phases(peer, PARTITIONS, records)
        finally:
            scraper.stopped.set()
            scraper.join()


@dataclass
class _Read:
    error_code: int
    records: object


@dataclass
class _Region:
    length: int


def _append_counted(counters: TopicCounters) -> None:
    """The increments `Partition.append` makes for one accepted batch."""
    counters.produce_requests += 1
    counters.bytes_in += 1 << 20
    counters.messages_in += 1024


def counting_ns() -> dict[str, float]:
    """Nanoseconds per call of the hot-path hooks, timed in this process (no I/O, no noise from other
    processes): a request observed by the dispatcher, a batch appended, a Fetch response counted (8 partitions)."""
    requests, topics, counters = RequestMetrics(), BrokerTopicMetrics(), TopicCounters()
    fetch = [("t", [_Read(0, _Region(1 << 20)) for _ in range(PARTITIONS)])]
    n = 200_000
    return {"request observed": timeit.timeit(lambda: requests.observe(ApiKey.PRODUCE, 7, 0.0012), number=n) / n * 1e9,
            "append counted": timeit.timeit(lambda: _append_counted(counters), number=n) / n * 1e9,
            "fetch response counted": timeit.timeit(lambda: topics.record_fetch(fetch, False), number=n) / n * 1e9}


def idle_cpu_ms_per_minute(with_metrics: bool, seconds: float) -> float:
    """Broker CPU of an idle broker over `seconds` (sampling, publishing and scrapes only), per minute."""
    port = free_port()
    overrides = {"strom.metrics.port": str(port)} if with_metrics else {"strom.metrics.enable": "false"}
    with strom(overrides) as peer:
        scraper = Scraper(port) if with_metrics else None
        before = peer.cpu_seconds()
        if scraper:
            scraper.start()
        threading.Event().wait(seconds)
        if scraper:
            scraper.stopped.set()
            scraper.join()
        return (peer.cpu_seconds() - before) * 1000 * 60 / seconds


def main() -> int:
    records = int(os.environ.get("BENCH_RECORDS", "1000000"))
    rounds = int(os.environ.get("BENCH_METRICS_ROUNDS", "3"))
    results: dict[tuple[bool, str], list[PhaseResult]] = {}
    print(f"metrics cost: {records:,} x 1 KiB records, {PARTITIONS} partitions, {rounds} rounds", flush=True)
    for round_ in range(rounds):
        for with_metrics in ((True, False) if round_ % 2 == 0 else (False, True)):
            for phase in run_variant(with_metrics, records):
                results.setdefault((with_metrics, phase.phase), []).append(phase)
                print(f"  round {round_ + 1} {'with' if with_metrics else 'without':<7} {phase.phase:<8} "
                      f"{phase.cpu_per_million:6.2f} CPU-s/1M  {phase.mb_per_s:7.1f} MB/s", flush=True)
    print(f"\n{'phase':<8} {'metrics':<8} {'CPU-s/1M (median)':>18} {'MB/s (median)':>14}")
    produce_cpu_per_million = statistics.median(r.cpu_per_million for r in results[(True, "produce")])
    for phase in ("produce", "consume"):
        medians = {}
        for with_metrics in (False, True):
            runs = results[(with_metrics, phase)]
            medians[with_metrics] = statistics.median(r.cpu_per_million for r in runs)
            print(f"{phase:<8} {'on' if with_metrics else 'off':<8} {medians[with_metrics]:>18.2f} "
                  f"{statistics.median(r.mb_per_s for r in runs):>14.1f}")
        share = (medians[True] - medians[False]) / medians[True] * 100
        print(f"{phase:<8} metrics' share of broker CPU: {share:+.1f} % (target < 2 % on produce)")
    idle_s = float(os.environ.get("BENCH_METRICS_IDLE_S", "60"))
    idle = {on: idle_cpu_ms_per_minute(on, idle_s) for on in (True, False)}
    print(f"\nidle broker over {idle_s:.0f} s: {idle[True]:.0f} CPU-ms/min with metrics (10 s samples, 15 s "
          f"scrapes), {idle[False]:.0f} without: {idle[True] - idle[False]:+.0f} CPU-ms/min fixed cost")
    hooks = counting_ns()
    print("\nhot-path hooks, in-process: " + ", ".join(f"{name} {ns:.0f} ns" for name, ns in hooks.items()))
    batches = records * RECORD_BYTES / (1 << 20)  # the workload's producer sends ~1 MiB batches
    hook_cpu = batches * (hooks["request observed"] + hooks["append counted"]) * 1e-9
    print(f"  produce: ~{batches:,.0f} requests/batches per run -> ~{hook_cpu * 1e3:.2f} ms of CPU per "
          f"{records:,} records, {hook_cpu / (produce_cpu_per_million * records / 1e6) * 100:.3f} % of the broker's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
