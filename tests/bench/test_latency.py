"""`make bench-latency`'s summary of repeated runs (`BENCH_LATENCY_REPEAT`): median and range per configuration,
and how many runs of issue 18's configuration met its target; a bad repeat count exits 2 with one line; the
machine's busy and stolen share of a run from two /proc/stat readings, and what the kernel wrote back meanwhile from
two /proc/vmstat readings; the Produce requests the brokers answered, from their /metrics, and the brokers' CPU
per request; the producer's CPU, its ended threads included."""

import os
import subprocess
import sys
import threading
import time

import pytest

from bench.latency import (
    PAGE_BYTES,
    REPO_ROOT,
    Latencies,
    MachineTimes,
    machine_share,
    pages_written,
    parse_pages_written,
    parse_produce_requests,
    process_cpu_s,
    produce_requests,
    repeat_summary,
    round_cost,
    written_back,
)
from bench.peers import free_port
from bench.peers.kafka_protocol import strom

TARGET = "cluster RF3 acks=all"


def run(label: str, rate: int, p99: float, p999: float) -> Latencies:
    """A run of 1,000 samples whose p99 is `p99` and p99.9 is `p999` (the 990th and 999th smallest)."""
    samples = [1.0] * 990 + [p99] * 9 + [p999]
    return Latencies(label, rate, rate, samples)


@pytest.mark.parametrize(("runs", "expected"), [
    # one run per configuration: nothing to summarise
    ([run(TARGET, 10_000, 4.0, 7.0)], []),
    # the target configuration: median and range, and the runs within both bounds
    ([run(TARGET, 10_000, 4.0, 7.0), run(TARGET, 10_000, 6.0, 8.0), run(TARGET, 10_000, 4.5, 25.0)],
     ["cluster RF3 acks=all 10000/s over 3 runs: p99 median 4.50 (4.00-6.00), p99.9 median 8.00 (7.00-25.00) ms; "
      "1 of 3 runs within p99 <= 5 and p99.9 <= 20 ms"]),
    # a bound is inclusive
    ([run(TARGET, 10_000, 5.0, 20.0), run(TARGET, 10_000, 5.0, 20.0)],
     ["cluster RF3 acks=all 10000/s over 2 runs: p99 median 5.00 (5.00-5.00), p99.9 median 20.00 (20.00-20.00) ms; "
      "2 of 2 runs within p99 <= 5 and p99.9 <= 20 ms"]),
    # other configurations: no target count; each configuration apart, in the order first run
    ([run("standalone RF1 acks=1", 1_000, 2.0, 3.0), run(TARGET, 1_000, 3.0, 4.0),
      run("standalone RF1 acks=1", 1_000, 4.0, 5.0), run(TARGET, 1_000, 3.0, 6.0)],
     ["standalone RF1 acks=1 1000/s over 2 runs: p99 median 3.00 (2.00-4.00), p99.9 median 4.00 (3.00-5.00) ms",
      "cluster RF3 acks=all 1000/s over 2 runs: p99 median 3.00 (3.00-3.00), p99.9 median 5.00 (4.00-6.00) ms"]),
])
def test_repeat_summary(runs: list[Latencies], expected: list[str]) -> None:
    assert repeat_summary(runs) == expected


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", ""])
def test_a_bad_repeat_count_exits_2_with_one_line(value: str) -> None:
    result = subprocess.run([sys.executable, "-m", "bench.latency"], cwd=REPO_ROOT, capture_output=True, text=True,
                            env={**os.environ, "BENCH_LATENCY_REPEAT": value}, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr == f"bench-latency: BENCH_LATENCY_REPEAT={value}: a whole number of runs, at least 1\n"
    assert result.stdout == ""


def test_machine_times_sum_the_kernels_fields_into_busy_idle_and_stolen():
    line = "cpu  100 2 30 400 5 6 7 8 0 0"  # user nice system idle iowait irq softirq steal guest guest_nice
    assert MachineTimes.parse(line) == MachineTimes(busy=100 + 2 + 30 + 6 + 7, idle=400 + 5, steal=8)
    assert MachineTimes.now().busy > 0  # this machine's own line parses


@pytest.mark.parametrize(("before", "after", "expected"), [
    (MachineTimes(0, 0, 0), MachineTimes(60, 30, 10), "machine: 60% busy, 10.0% stolen by the host"),
    (MachineTimes(100, 50, 5), MachineTimes(150, 150, 5), "machine: 33% busy, 0.0% stolen by the host"),
    (MachineTimes(7, 7, 7), MachineTimes(7, 7, 7), "machine: no CPU accounting"),
])
def test_machine_share(before: MachineTimes, after: MachineTimes, expected: str) -> None:
    assert machine_share(before, after) == expected


@pytest.mark.parametrize(("vmstat", "expected"), [
    ("nr_dirty 151\nnr_written 90210\nnr_writeback 3\n", 90210),
    ("nr_written_later 5\nnr_written 7", 7),  # the name whole, not a prefix
    ("nr_dirty 151\n", None),
])
def test_parse_pages_written(vmstat: str, expected: int | None) -> None:
    assert parse_pages_written(vmstat) == expected


def test_pages_written_reads_this_machines_count():
    assert pages_written() is not None


@pytest.mark.parametrize(("before", "after", "expected"), [
    (1_000, 1_000 + 250_000_000 // PAGE_BYTES, "250 MB written back by the kernel"),
    (5, 5, "0 MB written back by the kernel"),
    (None, 5, "writeback not counted"),
    (5, None, "writeback not counted"),
])
def test_written_back(before: int | None, after: int | None, expected: str) -> None:
    assert written_back(before, after) == expected


METRICS = """# HELP kafka_network_requestmetrics_requests_total requests per API and version
# TYPE kafka_network_requestmetrics_requests_total counter
kafka_network_requestmetrics_requests_total{request="Produce",version="9"} 120.0
kafka_network_requestmetrics_requests_total{request="Produce",version="11"} 3.0
kafka_network_requestmetrics_requests_total{request="Fetch",version="12"} 400.0
kafka_network_requestmetrics_requests_total{request="ProduceX",version="1"} 9.0
kafka_network_requestmetrics_totaltimems_count{request="Produce"} 77
"""


@pytest.mark.parametrize(("text", "expected"), [
    (METRICS, 123),  # every version of Produce, nothing else (not another API whose name starts the same)
    (METRICS.replace('{request="Produce",version="9"}', '{version="9",request="Produce"}'), 123),  # any label order
    ("kafka_network_requestmetrics_requests_total{request=\"Fetch\",version=\"12\"} 5.0\n", 0),
    ("", 0),
])
def test_parse_produce_requests(text: str, expected: int) -> None:
    assert parse_produce_requests(text) == expected


@pytest.mark.parametrize(("cpu_ns", "requests", "seconds", "expected"), [
    (900_000_000, 500, 1.0, "500 produce requests/s, 1.80 ms of the brokers' CPU per request"),
    (3_000_000_000, 6_000, 2.0, "3,000 produce requests/s, 0.50 ms of the brokers' CPU per request"),
    (900_000_000, 0, 1.0, "produce requests not counted"),
    (900_000_000, None, 1.0, "produce requests not counted"),
])
def test_round_cost(cpu_ns: int, requests: int | None, seconds: float, expected: str) -> None:
    assert round_cost(cpu_ns, requests, seconds) == expected


def test_produce_requests_counts_what_a_real_broker_answered():
    from confluent_kafka import Producer

    metrics_port = free_port()
    # the broker publishes no metrics samples to itself: the only Produce requests are the test's
    with strom({"strom.metrics.port": str(metrics_port), "strom.metrics.topic.enable": "false"}) as peer:
        urls = [f"http://127.0.0.1:{metrics_port}/metrics"]
        producer = Producer({"bootstrap.servers": peer.bootstrap, "acks": "all", "linger.ms": 0})
        producer.produce("counted", b"first")  # the topic is created, metadata known
        assert producer.flush(30) == 0
        before = produce_requests(urls)
        for i in range(5):  # flushed one at a time: five requests
            producer.produce("counted", b"record %d" % i)
            assert producer.flush(30) == 0
        assert produce_requests(urls) == before + 5
    assert produce_requests(urls) is None  # the broker is gone: not counted, not zero


def test_process_cpu_counts_a_thread_that_has_ended():
    def spin() -> None:
        deadline = time.thread_time() + 0.2
        while time.thread_time() < deadline:
            pass

    before = process_cpu_s()
    thread = threading.Thread(target=spin)
    thread.start()
    thread.join()
    assert process_cpu_s() - before >= 0.2
