"""`make bench-latency`'s summary of repeated runs (`BENCH_LATENCY_REPEAT`): median and range per configuration,
and how many runs of issue 18's configuration met its target; a bad repeat count exits 2 with one line."""

import os
import subprocess
import sys

import pytest

from bench.latency import REPO_ROOT, Latencies, repeat_summary

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
