"""Rollup arithmetic, table-driven: buckets, counter deltas across restarts, and spreading a delta over the
buckets an interval overlaps (exact integer sums, checked against a float oracle)."""

import pytest

from controlplane.metrics.rollup import CounterReading, bucket_start_ms, counter_deltas, sample_bucket_ms, spread

T0 = 1_699_999_200_000  # a multiple of 3600 s


@pytest.mark.parametrize(("ts", "resolution", "start"), [
    (T0, 10, T0), (T0 + 9_999, 10, T0), (T0 + 10_000, 10, T0 + 10_000),
    (T0 + 59_999, 60, T0), (T0 + 3_599_999, 3600, T0), (T0 + 3_600_000, 3600, T0 + 3_600_000),
])
def test_bucket_start(ts, resolution, start):
    assert bucket_start_ms(ts, resolution) == start


def reading(started, ts, **values):
    return CounterReading(started, ts, values)


@pytest.mark.parametrize(("previous", "current", "follows", "expected"), [
    # steady growth: the difference, since the previous reading
    (reading(T0, T0 + 10_000, b=100), reading(T0, T0 + 20_000, b=250), False, ({"b": 150}, T0 + 10_000)),
    # nothing new
    (reading(T0, T0 + 10_000, b=100), reading(T0, T0 + 20_000, b=100), False, ({"b": 0}, T0 + 10_000)),
    # broker restarted (new `started`): counting began again at 0, so the new value is all growth since then
    (reading(T0, T0 + 10_000, b=5_000), reading(T0 + 15_000, T0 + 20_000, b=70), False, ({"b": 70}, T0 + 15_000)),
    # restart noticed only because a counter went down (same started: e.g. a clock that went back)
    (reading(T0, T0 + 10_000, b=5_000, m=9), reading(T0, T0 + 20_000, b=40, m=10), False,
     ({"b": 40, "m": 10}, T0)),
    # restarted to a value higher than before: caught by `started`, not by comparing values
    (reading(T0, T0 + 10_000, b=10), reading(T0 + 12_000, T0 + 20_000, b=900), False, ({"b": 900}, T0 + 12_000)),
    # first reading of an entity we have followed since its broker started: counted from 0
    (None, reading(T0, T0 + 10_000, b=30), True, ({"b": 30}, T0)),
    # first reading, history unseen (consumer installed on a running cluster): a baseline only
    (None, reading(T0, T0 + 10_000, b=30), False, None),
    # a counter that appears later (new field) counts from 0
    (reading(T0, T0 + 10_000, b=1), reading(T0, T0 + 20_000, b=2, n=5), False, ({"b": 1, "n": 5}, T0 + 10_000)),
])
def test_counter_deltas(previous, current, follows, expected):
    assert counter_deltas(previous, current, follows) == expected


@pytest.mark.parametrize(("start", "end", "resolution", "delta"), [
    (T0, T0 + 10_000, 10, 1000),             # exactly one bucket
    (T0 + 5_000, T0 + 15_000, 10, 1000),     # half in each of two buckets
    (T0 + 3_000, T0 + 10_000, 10, 7),        # within one bucket, ending on its edge
    (T0 + 3_000, T0 + 10_001, 10, 7),        # one millisecond into the next bucket
    (T0 + 1, T0 + 90_000, 10, 1_000_003),    # a gap of nine buckets (publisher down), uneven
    (T0 + 10_000, T0 + 20_000, 60, 12345),   # coarser resolution: all in one bucket
    (T0 - 1_000, T0 + 3_600_500, 3600, 99),  # three hour buckets
    (T0, T0 + 30_000, 10, 1),                # one unit over three buckets: exactly one gets it
])
def test_spread_sums_exactly_and_follows_the_overlap(start, end, resolution, delta):
    parts = spread({"b": delta}, start, end, resolution)
    assert sum(p["b"] for p in parts.values()) == delta
    width = resolution * 1000
    for bucket, p in parts.items():
        assert bucket % width == 0
        overlap = min(end, bucket + width) - max(start, bucket)
        assert 0 < overlap <= width
        assert abs(p["b"] - delta * overlap / (end - start)) < 1  # oracle: proportional share, rounded
    assert min(parts) == bucket_start_ms(start, resolution)
    assert max(parts) == sample_bucket_ms(end, resolution)


def test_spread_of_nothing_writes_nothing():
    assert spread({"b": 0, "m": 0}, T0, T0 + 10_000, 10) == {}


def test_spread_of_an_empty_interval_lands_in_the_bucket_its_sample_ends():
    assert spread({"b": 5}, T0 + 12_000, T0 + 12_000, 10) == {T0 + 10_000: {"b": 5}}
    assert spread({"b": 5}, T0 + 20_000, T0 + 20_000, 10) == {T0 + 10_000: {"b": 5}}


def test_a_sample_on_a_bucket_edge_describes_the_bucket_it_ends():
    assert sample_bucket_ms(T0 + 10_000, 10) == T0
    assert spread({"b": 8}, T0, T0 + 10_000, 10) == {T0: {"b": 8}}
