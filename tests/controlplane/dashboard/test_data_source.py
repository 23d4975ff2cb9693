"""The Throughput page's series (`MetadataStoreDataSource.broker_throughput` / `topic_throughput`) against an
oracle that computes them point by point in Python from the same rollup rows: which topics are the top N,
and every step's rate, at each range the page offers, over histories with gaps, a topic whose data stops
early, an internal topic, a tie and a topic without traffic."""

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from controlplane.dashboard.data_source import MetadataStoreDataSource, resolution_for
from controlplane.metrics.models import BrokerMetricPoint, TopicMetricPoint

pytestmark = pytest.mark.django_db
UNTIL = datetime(2026, 3, 2, 12, 0, 7, tzinfo=UTC)  # mid-bucket: the newest step is still filling
METRICS = ("bytes_in", "bytes_out", "messages_in")
RANGES = [timedelta(hours=1), timedelta(hours=24), timedelta(days=7)]


def _history(kind: str, rng: random.Random) -> list[tuple[int, datetime, str, dict[str, int]]]:
    """(resolution, start, key, {metric: value}) of every point, at 10 s / 1 min / 1 h over the last 8 days."""
    rows = []
    for resolution, span in ((10, timedelta(hours=2)), (60, timedelta(hours=25)), (3600, timedelta(days=8))):
        first = UNTIL - span
        moment = datetime.fromtimestamp(int(first.timestamp()) // resolution * resolution, UTC)
        while moment < UNTIL:
            minute = int(moment.timestamp()) // 60
            keys = ([f"topic-{t}" for t in range(6)] + ["__strom_metrics", "idle", "tie-a", "tie-b"]
                    if kind == "topic" else [1, 2, 3])
            for key in keys:
                if key == "topic-4" and moment > UNTIL - timedelta(minutes=7):
                    continue  # its data stops early: its newest step is its own
                if key == "topic-5" and minute % 90 < 20:
                    continue  # gaps
                if key == "idle":
                    values = dict.fromkeys(METRICS, 0)
                elif key in ("tie-a", "tie-b"):
                    values = {m: 7 * resolution for m in METRICS}
                else:
                    scale = 10**6 if key == "__strom_metrics" else 1
                    values = {m: rng.randint(0, 50) * resolution * scale for m in METRICS}
                rows.append((resolution, moment, key, values))
            moment += timedelta(seconds=resolution)
    return rows


@pytest.fixture(scope="module")
def histories(django_db_setup, django_db_blocker):
    rng = random.Random(15)
    topic_rows, broker_rows = _history("topic", rng), _history("broker", rng)
    with django_db_blocker.unblock():
        TopicMetricPoint.objects.bulk_create(TopicMetricPoint(resolution=r, start=s, topic=k, **v)
                                             for r, s, k, v in topic_rows)
        BrokerMetricPoint.objects.bulk_create(BrokerMetricPoint(resolution=r, start=s, broker_id=k, **v)
                                              for r, s, k, v in broker_rows)
    yield topic_rows, broker_rows
    with django_db_blocker.unblock():
        TopicMetricPoint.objects.all().delete()
        BrokerMetricPoint.objects.all().delete()


def _floor(moment: datetime, step_s: int) -> int:
    return int(moment.timestamp()) // step_s * step_s


def _oracle_series(rows, key, metric: str, since: datetime, resolution: int, step: int, newest_of_all: int | None
                   ) -> tuple[list[datetime], list[float | None]]:
    """One key's rates: its points at `resolution` in the whole steps covering [since, UNTIL) summed per step
    and divided by the step's width, or for the newest step by the time covered up to the newest point (of the
    key, or of all keys)."""
    first = datetime.fromtimestamp(_floor(since, step), UTC)
    sums: defaultdict[int, int] = defaultdict(int)
    for r, start, k, values in rows:
        if r == resolution and k == key and first <= start < UNTIL:
            sums[_floor(start, step)] += values[metric]
    if not sums:
        return [], []
    newest = max(int(start.timestamp()) for r, start, k, _ in rows if r == resolution and k == key
                 and first <= start < UNTIL) if newest_of_all is None else newest_of_all
    data_end = newest + resolution
    steps = range(max(min(sums), _floor(since, step)), min(max(sums), _floor(UNTIL, step)) + 1, step)
    return ([datetime.fromtimestamp(s, UTC) for s in steps],
            [sums[s] / max(min(step, data_end - s), 1) if s in sums else None for s in steps])


def _oracle_top(rows, metric: str, since: datetime, top: int) -> list[str]:
    """The topics with the most `metric` in the hours (ranges up to 6 h: the minutes) covering the range."""
    ranking = 3600 if UNTIL - since > timedelta(hours=6) else 60
    first = datetime.fromtimestamp(_floor(since, ranking), UTC)
    totals: defaultdict[str, int] = defaultdict(int)
    for r, start, topic, values in rows:
        if r == ranking and first <= start < UNTIL and not topic.startswith("__"):
            totals[topic] += values[metric]
    return [t for t in sorted(totals, key=lambda t: (-totals[t], t))[:top] if totals[t]]


@pytest.mark.parametrize("span", RANGES, ids=["1h", "24h", "7d"])
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("top", [3, 10])
def test_topic_throughput_matches_the_oracle(histories, span, metric, top):
    topic_rows, _ = histories
    since = UNTIL - span
    resolution, step = resolution_for(span)
    rollup = MetadataStoreDataSource().topic_throughput(metric, since, UNTIL, top)

    expected_top = _oracle_top(topic_rows, metric, since, top)
    assert [s.name for s in rollup.series] == expected_top
    assert "__strom_metrics" not in expected_top and "idle" not in expected_top
    assert rollup.step_s == step
    for series in rollup.series:
        times, values = _oracle_series(topic_rows, series.name, metric, since, resolution, step, None)
        assert series.times == times, series.name
        assert series.values == pytest.approx(values), series.name


@pytest.mark.parametrize("span", RANGES, ids=["1h", "24h", "7d"])
def test_broker_throughput_matches_the_oracle(histories, span):
    _, broker_rows = histories
    since = UNTIL - span
    resolution, step = resolution_for(span)
    rollup = MetadataStoreDataSource().broker_throughput("bytes_in", since, UNTIL)

    newest = max(int(start.timestamp()) for r, start, _, _ in broker_rows if r == resolution and start < UNTIL)
    assert [s.name for s in rollup.series] == ["broker 1", "broker 2", "broker 3"]
    for broker, series in zip((1, 2, 3), rollup.series, strict=True):
        times, values = _oracle_series(broker_rows, broker, "bytes_in", since, resolution, step, newest)
        assert series.times == times
        assert series.values == pytest.approx(values)


@pytest.mark.parametrize("span", RANGES, ids=["1h", "24h", "7d"])
def test_a_steady_rate_is_a_flat_line_from_the_range_start_on(histories, span):
    """A range starts mid-step: its oldest step still reads a whole step, not a dip at the chart's left edge."""
    since = UNTIL - span
    assert int(since.timestamp()) % resolution_for(span)[1]  # the case this is about
    rollup = MetadataStoreDataSource().topic_throughput("bytes_in", since, UNTIL, 10)
    steady = next(series for series in rollup.series if series.name == "tie-a")
    assert steady.times[0] <= since
    assert set(steady.values) == {7.0}
