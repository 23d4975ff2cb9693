"""Lag report transforms on generated samples with known answers (a local Spark session)."""

import random
from datetime import UTC, datetime

import pytest

from spark_jobs.transforms.lag import (
    PARTITION_KEYS,
    SAMPLE_SCHEMA,
    Period,
    breach_episodes,
    group_report,
    held_intervals,
    partition_report,
    worst_partitions,
)

MINUTE = 60_000
T10 = int(datetime(2026, 5, 4, 10, tzinfo=UTC).timestamp() * 1000)  # 10:00
PERIOD = Period(start_ms=T10, end_ms=T10 + 120 * MINUTE, max_gap_ms=5 * MINUTE)  # 10:00-12:00


def sample(minute, group="billing", topic="orders", partition=0, lag=0, lag_seconds=0.0, status="OK",
           group_status=None, breached=False, second=0):
    return {"ts": T10 + minute * MINUTE + second * 1000, "cluster": "local", "group": group, "topic": topic,
            "partition": partition, "committed_offset": 1000 - lag, "end_offset": 1000, "lag": lag,
            "lag_seconds": lag_seconds, "status": status, "group_status": group_status or status,
            "threshold_breached": breached}


def lagging_30_minutes():
    """Sampled every minute 10:00-11:59: WARN 10:30-10:40, ERR 10:40-11:00 (threshold breached), OK again
    from the 11:00 sample on."""
    rows = []
    for minute in range(120):
        if 30 <= minute < 40:
            rows.append(sample(minute, lag=100 * (minute - 29), lag_seconds=30.0 * (minute - 29), status="WARN",
                               breached=True))
        elif 40 <= minute < 60:
            rows.append(sample(minute, lag=100 * (minute - 29), lag_seconds=30.0 * (minute - 29), status="ERR",
                               breached=True))
        else:
            rows.append(sample(minute))
    return rows


@pytest.fixture(scope="module")
def frame(spark):
    return lambda rows: spark.createDataFrame(rows, SAMPLE_SCHEMA)


def report(samples):
    return partition_report(held_intervals(samples, PERIOD, PARTITION_KEYS), PERIOD)


def test_a_group_lagging_for_exactly_30_minutes_shows_30_minutes_in_warn_and_err(frame):
    row = report(frame(lagging_30_minutes())).collect()[0]
    assert (row.seconds_warn, row.seconds_err) == (600, 1200)
    assert row.seconds_ok == 7200 - 1800 and row.seconds_observed == 7200
    assert (row.breaches, row.breach_seconds, row.longest_breach_seconds) == (1, 1800, 1800)
    assert row.samples == 120 and row.last_status == "OK" and row.last_lag == 0
    assert row.lag_max == 3000 and row.lag_seconds_max == 900.0
    # nearest rank (the ceil(p·n)-th value): 90 of 120 samples have lag 0; the 95th percentile is rank 114
    lags = sorted(r["lag"] for r in lagging_30_minutes())
    assert row.lag_p50 == lags[59] == 0 and row.lag_p95 == lags[113]
    group = group_report(frame(lagging_30_minutes()), report(frame(lagging_30_minutes())),
                         PERIOD).collect()[0]
    assert (group.seconds_warn, group.seconds_err, group.worst_status) == (600, 1200, "ERR")
    assert (group.partitions, group.topics, group.breaches) == (1, 1, 1)


def test_percentiles_are_exact_nearest_ranks_beyond_10000_samples_and_null_without_samples(frame):
    lags = random.Random(16).sample(range(20_002), 10_001)  # distinct, shuffled; one sample every 0.7 s
    rows = [{**sample(0, lag=lag, lag_seconds=lag / 10), "ts": T10 + i * 700} for i, lag in enumerate(lags)]
    rows.append(sample(-3, partition=1, lag=5))  # 09:57: holds 10:00-10:02 (the max gap), taken before the period
    rows = {r.partition: r for r in report(frame(rows)).collect()}
    ranked = sorted(lags)
    assert (rows[0].samples, rows[0].lag_p50, rows[0].lag_p95) == (10_001, ranked[5000], ranked[9500])
    assert rows[0].lag_seconds_p95 == ranked[9500] / 10
    assert (rows[1].samples, rows[1].lag_p50, rows[1].lag_seconds_p95, rows[1].seconds_ok) == (0, None, None, 120)


def test_breach_episodes_and_ongoing_breaches(frame):
    rows = [sample(m, breached=m in (10, 11, 12) or m >= 100, lag=m) for m in range(120)]
    held = held_intervals(frame(rows), PERIOD, PARTITION_KEYS)
    episodes = sorted(breach_episodes(held, PERIOD).collect(), key=lambda e: e.started)
    assert [(e.duration_seconds, e.ongoing, e.lag_max) for e in episodes] == [(180, False, 12), (1200, True, 119)]
    assert episodes[0].started == datetime(2026, 5, 4, 10, 10) and episodes[0].ended == datetime(2026, 5, 4, 10, 13)


def test_time_is_clipped_to_the_period_and_long_silences_are_unobserved(frame):
    rows = [
        sample(-1, second=30, status="ERR"),  # 09:59:30, before the period: holds 10:00:00-10:00:30
        sample(0, second=30, status="WARN"),  # 10:00:30
        sample(1, second=30),  # 10:01:30, then silence: stands for 5 minutes (max gap) only
        sample(119, second=30, status="STALL"),  # 11:59:30: holds until the period's end
        sample(120, status="STOP"),  # 12:00: after the period
    ]
    row = report(frame(rows)).collect()[0]
    assert (row.seconds_err, row.seconds_warn, row.seconds_ok, row.seconds_stall, row.seconds_stop) == \
        (30, 60, 300, 30, 0)
    assert row.seconds_observed == 420 and row.samples == 3


def test_trend_of_a_growing_lag(frame):
    growing = [sample(m, partition=1, lag=100 * m, lag_seconds=float(m * 60)) for m in range(120)]
    steady = [sample(m, partition=2, lag=500 + (m % 2), lag_seconds=5.0) for m in range(120)]
    rows = {r.partition: r for r in report(frame(growing + steady)).collect()}
    assert rows[1].lag_trend_per_hour == pytest.approx(6000) and rows[1].lag_trend_r2 == pytest.approx(1)
    assert rows[1].lag_seconds_trend_per_hour == pytest.approx(3600)
    assert rows[1].lag_growing and not rows[2].lag_growing


def test_worst_partitions_rank_unhealthy_time_first(frame):
    rows = lagging_30_minutes()
    rows += [sample(m, group="search", status="ERR" if m < 10 else "OK", lag_seconds=500.0) for m in range(120)]
    rows += [sample(m, group="audit", lag_seconds=900.0) for m in range(120)]
    worst = worst_partitions(report(frame(rows)), 2).collect()
    assert [(w.rank, w.group, w.unhealthy_seconds) for w in worst] == [(1, "billing", 1800), (2, "search", 600)]
