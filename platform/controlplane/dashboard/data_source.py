"""The control plane's implementation of webui's DashboardDataSource: the metadata store and the metrics rollups.

Built for scale (thousands of topics, tens of thousands of partitions, days of history): counts are taken
from one pass over the partitions' (replicas, ISR, leader) columns, reused for two seconds by every call of
the same refresh; time series are read at the coarsest resolution that still gives about `MAX_POINTS`
points per series and summed into steps in Python, so a response stays small whatever the range.
"""

import functools
import json
import math
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db.models import BigIntegerField, Case, ExpressionWrapper, Func, Max, Min, Sum, TextField, Value, When
from django.db.models.functions import Cast

from controlplane.alerts.incidents import open_count as open_alert_count
from controlplane.cluster.models import Broker, BrokerState, ControllerState
from controlplane.metrics.models import (
    BrokerMetricPoint,
    LagMetricPoint,
    LogDirMetricPoint,
    TopicMetricPoint,
    TopicReplicaSize,
)
from controlplane.topics.models import NO_LEADER, Partition, Topic
from webui.data import (
    BrokerLoad,
    ClusterSummary,
    Heatmap,
    LagHistory,
    LogDirUsage,
    Reassignment,
    Rollup,
    Series,
)

MAX_POINTS = 300
SCAN_TTL_S = 2.0
STATUS_SEVERITY = {"NOTFOUND": 0, "OK": 1, "REWIND": 2, "WARN": 3, "STALL": 4, "STOP": 5, "ERR": 6}


def resolution_for(span: timedelta) -> tuple[int, int]:
    """(stored resolution to read, step of the answer) in seconds for a range of `span`."""
    seconds = span.total_seconds()
    resolution = 10 if seconds <= 6 * 3600 else 60 if seconds <= 3 * 86_400 else 3600
    step = resolution * max(1, math.ceil(seconds / MAX_POINTS / resolution))
    return resolution, step


def _step_start(moment: datetime, step_s: int) -> int:
    ts = int(moment.timestamp())
    return ts - ts % step_s


@functools.lru_cache(maxsize=65_536)
def _broker_ids(text: str) -> tuple[int, ...]:
    """A replica or ISR list stored as JSON text, e.g. "[1, 2, 3]"."""
    return tuple(json.loads(text))


class EpochSeconds(Func):
    """A datetime column as integer seconds since the epoch (UTC), in SQLite and PostgreSQL."""

    output_field = BigIntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="unixepoch(%(expressions)s)", **extra)  # SQLite >= 3.38

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="CAST(EXTRACT(EPOCH FROM %(expressions)s) AS BIGINT)",
                           **extra)


def _step_expression(step_s: int):
    """The start (epoch s) of the `step_s`-wide step holding a point's `start`: integer division in SQL."""
    return ExpressionWrapper(EpochSeconds("start") / Value(step_s) * Value(step_s), output_field=BigIntegerField())


def _bucket(moment: datetime, resolution_s: int) -> datetime:
    """The start of the bucket of `resolution_s` holding `moment`."""
    return datetime.fromtimestamp(_step_start(moment, resolution_s), UTC)


def _series(name: str, points: dict[int, float], since: datetime, until: datetime, step_s: int) -> Series:
    """A series over every step of [since, until) that has data before or after it: steps without data
    inside the span of data are None (a gap in the line, not a zero)."""
    if not points:
        return Series(name, [], [])
    first, last = min(points), max(points)
    steps = range(max(first, _step_start(since, step_s)), min(last, _step_start(until, step_s)) + 1, step_s)
    return Series(name, [datetime.fromtimestamp(s, UTC) for s in steps], [points.get(s) for s in steps])


class MetadataStoreDataSource:
    """Reads through the ORM on every call (the dashboard refreshes on its own interval). Thread-safe."""

    def __init__(self) -> None:
        self._scan: tuple[float, list[tuple[str, tuple[int, ...], tuple[int, ...], int]]] | None = None
        self._scan_lock = threading.Lock()

    # --- metadata ------------------------------------------------------------------------------------------

    def _partitions(self) -> list[tuple[str, tuple[int, ...], tuple[int, ...], int]]:
        """(topic, replicas, isr, leader) of every partition, at most SCAN_TTL_S old."""
        with self._scan_lock:
            if self._scan is None or time.monotonic() - self._scan[0] > SCAN_TTL_S:
                # The JSON columns as text, decoded once per distinct list: a cluster has few distinct replica
                # lists, and decoding 40,000 of them (as JSONField does) dominated the refresh.
                rows = [(topic, _broker_ids(replicas), _broker_ids(isr), leader) for topic, replicas, isr, leader in
                        Partition.objects.values_list("topic__name", Cast("replicas", TextField()),
                                                      Cast("isr", TextField()), "leader")]
                self._scan = (time.monotonic(), rows)
            return self._scan[1]

    def cluster_summary(self) -> ClusterSummary:
        states = dict(Broker.objects.values_list("broker_id", "state"))
        running = {b for b, state in states.items() if state == BrokerState.RUNNING}
        rows = self._partitions()
        return ClusterSummary(
            brokers_total=len(states), brokers_running=len(running), topics=Topic.objects.count(),
            partitions=len(rows),
            offline_partitions=sum(1 for _, _, _, leader in rows if leader == NO_LEADER or leader not in running),
            under_replicated_partitions=sum(1 for _, replicas, isr, _ in rows if len(isr) < len(replicas)),
            controller_epoch=ControllerState.current().controller_epoch,
            controller_id=min(running) if running else -1, open_alerts=open_alert_count())

    def broker_load(self) -> list[BrokerLoad]:
        leaders: defaultdict[int, int] = defaultdict(int)
        replicas: defaultdict[int, int] = defaultdict(int)
        for _, replica_ids, _, leader in self._partitions():
            for broker in replica_ids:
                replicas[broker] += 1
            if leader != NO_LEADER:
                leaders[leader] += 1
        return [BrokerLoad(broker_id=b, state=state, leaders=leaders[b], replicas=replicas[b])
                for b, state in Broker.objects.order_by("broker_id").values_list("broker_id", "state")]

    def partition_heatmap(self, metric: str, top: int) -> Heatmap:
        cells: defaultdict[str, defaultdict[int, float]] = defaultdict(lambda: defaultdict(float))
        if metric == "size_bytes":
            for topic, broker, size in TopicReplicaSize.objects.values_list("topic", "broker_id", "size_bytes"):
                cells[topic][broker] += size
        else:
            for topic, replicas, isr, leader in self._partitions():
                for broker in replicas:
                    if metric == "replicas" or (metric == "out_of_sync" and broker not in isr):
                        cells[topic][broker] += 1
                if metric == "leaders" and leader != NO_LEADER:
                    cells[topic][leader] += 1
        brokers = list(Broker.objects.order_by("broker_id").values_list("broker_id", flat=True))
        ranked = sorted(cells, key=lambda t: (-sum(cells[t].values()), t))[:top]
        ranked = [t for t in ranked if sum(cells[t].values()) > 0]
        return Heatmap(brokers=brokers, topics=ranked, z=[[cells[t].get(b, 0) for b in brokers] for t in ranked],
                       topics_total=Topic.objects.count())

    def reassignments(self) -> list[Reassignment] | None:
        return None  # partition reassignment is not implemented yet (issue 13 fills this in)

    # --- rollups -------------------------------------------------------------------------------------------

    @staticmethod
    def _history_starts(model) -> datetime | None:
        return model.objects.filter(resolution=3600).aggregate(first=Min("start"))["first"]

    @staticmethod
    def _steps(queryset, keys: tuple[str, ...], value: str, step_s: int, aggregate=Sum
               ) -> tuple[dict[object, dict[int, float]], dict[object, int]]:
        """({key: {step start (epoch s): aggregate(value)}}, {key: start of its newest bucket (epoch s)}),
        grouped in the database (a few hundred rows come back, never one per bucket). `key` is the value of
        `keys` (a tuple when several, None when none)."""
        rows = (queryset.annotate(step=_step_expression(step_s)).values(*keys, "step")
                .annotate(total=aggregate(value), last=Max(EpochSeconds("start"))).order_by()
                .values_list(*keys, "step", "total", "last"))
        steps: defaultdict[object, dict[int, float]] = defaultdict(dict)
        newest: defaultdict[object, int] = defaultdict(int)
        for row in rows:
            key = None if not keys else row[0] if len(keys) == 1 else row[:len(keys)]
            step, total, last = row[len(keys):]
            steps[key][step] = total or 0
            newest[key] = max(newest[key], last)
        return steps, newest

    def _rates(self, queryset, keys: tuple[str, ...], value: str, resolution_s: int, step_s: int,
               newest_per_key: bool = False) -> dict[object, dict[int, float]]:
        """Per key and step, `value` per second: each step's sum over its width, except the newest, still
        filling, which is divided by the time its buckets cover so far: up to the newest bucket of any key, or
        with `newest_per_key` of the key itself. `queryset` must hold whole steps: a range's oldest step starts
        before the range does (`_bucket(since, step_s)`), else it would read as a dip at the chart's left edge."""
        sums, newest = self._steps(queryset, keys, value, step_s)
        overall = max(newest.values(), default=0)
        rates = {}
        for key, points in sums.items():
            data_end = (newest[key] if newest_per_key else overall) + resolution_s
            rates[key] = {s: v / max(min(step_s, data_end - s), 1) for s, v in points.items()}
        return rates

    def cluster_throughput(self, since: datetime, until: datetime) -> Rollup:
        resolution, step = resolution_for(until - since)
        points = BrokerMetricPoint.objects.filter(resolution=resolution, start__gte=_bucket(since, step),
                                                  start__lt=until)
        series = [_series(name, self._rates(points, (), field, resolution, step).get(None, {}), since, until, step)
                  for name, field in (("bytes in", "bytes_in"), ("bytes out", "bytes_out"))]
        return Rollup(step, series, self._history_starts(BrokerMetricPoint))

    def broker_throughput(self, metric: str, since: datetime, until: datetime) -> Rollup:
        resolution, step = resolution_for(until - since)
        points = BrokerMetricPoint.objects.filter(resolution=resolution, start__gte=_bucket(since, step),
                                                  start__lt=until)
        rates = self._rates(points, ("broker_id",), metric, resolution, step)
        return Rollup(step, [_series(f"broker {b}", rates[b], since, until, step) for b in sorted(rates)],
                      self._history_starts(BrokerMetricPoint))

    def topic_throughput(self, metric: str, since: datetime, until: datetime, top: int) -> Rollup:
        """Internal topics (`__…`) are left out: operators look for their own topics here. The top topics are
        those with the most in the hours (or, up to 6 h, the minutes) covering the range."""
        resolution, step = resolution_for(until - since)
        # Rank on coarse points (every topic's rows in the range are summed), then read the winners finely.
        ranking = 3600 if until - since > timedelta(hours=6) else 60
        ranked = TopicMetricPoint.objects.filter(resolution=ranking, start__gte=_bucket(since, ranking),
                                                 start__lt=until).exclude(topic__startswith="__")
        leaders = [t for t, total in ranked.values("topic").annotate(total=Sum(metric))
                   .order_by("-total", "topic").values_list("topic", "total")[:top] if total]
        # The winners' series in one query (it walks the (resolution, topic, start) index once per topic).
        points = TopicMetricPoint.objects.filter(resolution=resolution, topic__in=leaders,
                                                 start__gte=_bucket(since, step), start__lt=until)
        rates = self._rates(points, ("topic",), metric, resolution, step, newest_per_key=True)
        return Rollup(step, [_series(topic, rates.get(topic, {}), since, until, step) for topic in leaders],
                      self._history_starts(TopicMetricPoint))

    def lag_groups(self) -> list[str]:
        return list(LagMetricPoint.objects.filter(resolution=3600).order_by("group")
                    .values_list("group", flat=True).distinct())

    def lag_history(self, group: str, since: datetime, until: datetime) -> LagHistory:
        resolution, step = resolution_for(until - since)
        resolution = max(resolution, 60)  # lag is kept at 1 min and 1 h
        step = max(step, resolution)
        points = LagMetricPoint.objects.filter(resolution=resolution, group=group, start__gte=since,
                                               start__lt=until)
        lag = self._steps(points, (), "lag", step, Max)[0].get(None, {})
        seconds = self._steps(points, (), "lag_seconds", step, Max)[0].get(None, {})
        severity = Case(*[When(status=name, then=Value(rank)) for name, rank in STATUS_SEVERITY.items()],
                        default=Value(0))
        worst = self._steps(points.annotate(severity=severity), (), "severity", step, Max)[0].get(None, {})
        names = {rank: name for name, rank in STATUS_SEVERITY.items()}
        keys = sorted(lag)
        return LagHistory(group, step, [datetime.fromtimestamp(s, UTC) for s in keys], [lag[s] for s in keys],
                          [seconds.get(s, 0.0) for s in keys], [names.get(worst.get(s, 0), "NOTFOUND") for s in keys])

    def disk_usage(self) -> list[LogDirUsage]:
        latest: dict[tuple[int, str], LogDirMetricPoint] = {}
        newest = LogDirMetricPoint.objects.filter(resolution=60).order_by("-start").first()
        if newest is None:
            return []
        recent = LogDirMetricPoint.objects.filter(resolution=60, start__gte=newest.start - timedelta(minutes=10))
        for point in recent.order_by("start"):
            latest[(point.broker_id, point.path)] = point
        week = defaultdict(list)
        for broker, path, start, size in LogDirMetricPoint.objects.filter(
                resolution=3600, start__gte=newest.start - timedelta(days=7)).order_by("start").values_list(
                "broker_id", "path", "start", "size_bytes"):
            week[(broker, path)].append((start, size))
        usage = []
        for key, point in sorted(latest.items()):
            history = week.get(key, [])
            growth = None
            if len(history) >= 2 and history[-1][0] > history[0][0]:
                days = (history[-1][0] - history[0][0]).total_seconds() / 86_400
                growth = (history[-1][1] - history[0][1]) / days
            usage.append(LogDirUsage(point.broker_id, point.path, point.size_bytes, point.total_bytes,
                                     point.free_bytes, growth, point.start))
        return usage

    def disk_history(self, since: datetime, until: datetime) -> Rollup:
        """The largest size sampled in each step, per log dir."""
        resolution, step = resolution_for(until - since)
        points = LogDirMetricPoint.objects.filter(resolution=resolution, start__gte=since, start__lt=until)
        sizes = self._steps(points, ("broker_id", "path"), "size_bytes", step, Max)[0]
        return Rollup(step, [_series(f"broker {b}: {path}", sizes[(b, path)], since, until, step)
                             for b, path in sorted(sizes)], self._history_starts(LogDirMetricPoint))
