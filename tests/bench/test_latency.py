"""`make bench-latency`'s summary of repeated runs (`BENCH_LATENCY_REPEAT`): median and range per configuration,
and how many runs of issue 18's configuration met its target; a bad repeat count exits 2 with one line; the
machine's busy and stolen share of a run from two /proc/stat readings, and what the kernel wrote back meanwhile from
two /proc/vmstat readings."""

import os
import subprocess
import sys

import pytest

from bench.latency import (
    PAGE_BYTES,
    REPO_ROOT,
    Latencies,
    MachineTimes,
    machine_share,
    pages_written,
    parse_pages_written,
    repeat_summary,
    written_back,
)

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
