"""The control plane's implementation of webui's DashboardDataSource: the metadata store and the metrics rollups.

Built for scale (thousands of topics, tens of thousands of partitions, days of history): counts are taken
from one pass over the partitions' (replicas, ISR, leader) columns, reused for two seconds by every call of
the same refresh; time series are read at the coarsest resolution that still gives about `MAX_POINTS`
points per series and summed into steps in Python, so a response stays small whatever the range.
"""

import math
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.db.models import Min, Sum

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
        self._scan: tuple[float, list[tuple[str, list[int], list[int], int]]] | None = None
        self._scan_lock = threading.Lock()

    # --- metadata ------------------------------------------------------------------------------------------

    def _partitions(self) -> list[tuple[str, list[int], list[int], int]]:
        """(topic, replicas, isr, leader) of every partition, at most SCAN_TTL_S old."""
        with self._scan_lock:
            if self._scan is None or time.monotonic() - self._scan[0] > SCAN_TTL_S:
                rows = list(Partition.objects.values_list("topic__name", "replicas", "isr", "leader"))
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
            controller_id=min(running) if running else -1)

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
    def _rates(rows: Iterable[tuple[object, datetime, int]], resolution_s: int, step_s: int
               ) -> dict[object, dict[int, float]]:
        """{key: {step start: sum / seconds}} from (key, bucket start, value) rows. A step is divided by its
        width, except the newest, still filling, which is divided by the time its buckets cover so far."""
        sums: defaultdict[object, defaultdict[int, float]] = defaultdict(lambda: defaultdict(float))
        data_end = 0
        for key, start, value in rows:
            bucket = int(start.timestamp())
            sums[key][bucket - bucket % step_s] += value or 0
            data_end = max(data_end, bucket + resolution_s)
        return {key: {s: v / min(step_s, data_end - s) for s, v in points.items()} for key, points in sums.items()}

    def cluster_throughput(self, since: datetime, until: datetime) -> Rollup:
        resolution, step = resolution_for(until - since)
        rows = (BrokerMetricPoint.objects.filter(resolution=resolution, start__gte=since, start__lt=until)
                .values("start").annotate(bytes_in=Sum("bytes_in"), bytes_out=Sum("bytes_out"))
                .values_list("start", "bytes_in", "bytes_out"))
        rows = list(rows)
        rates = self._rates([(name, start, v) for start, b_in, b_out in rows
                             for name, v in (("bytes in", b_in), ("bytes out", b_out))], resolution, step)
        return Rollup(step, [_series(n, rates.get(n, {}), since, until, step) for n in ("bytes in", "bytes out")],
                      self._history_starts(BrokerMetricPoint))

    def broker_throughput(self, metric: str, since: datetime, until: datetime) -> Rollup:
        resolution, step = resolution_for(until - since)
        rows = BrokerMetricPoint.objects.filter(resolution=resolution, start__gte=since, start__lt=until
                                                ).values_list("broker_id", "start", metric)
        rates = self._rates(rows, resolution, step)
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
        rows = TopicMetricPoint.objects.filter(resolution=resolution, topic__in=leaders, start__gte=since,
                                               start__lt=until).values_list("topic", "start", metric)
        rates = self._rates(rows, resolution, step)
        return Rollup(step, [_series(t, rates.get(t, {}), since, until, step) for t in leaders],
                      self._history_starts(TopicMetricPoint))

    def lag_groups(self) -> list[str]:
        return list(LagMetricPoint.objects.filter(resolution=3600).order_by("group")
                    .values_list("group", flat=True).distinct())

    def lag_history(self, group: str, since: datetime, until: datetime) -> LagHistory:
        resolution, step = resolution_for(until - since)
        resolution = max(resolution, 60)  # lag is kept at 1 min and 1 h
        step = max(step, resolution)
        steps: dict[int, list] = {}
        for start, lag, lag_s, status in LagMetricPoint.objects.filter(
                resolution=resolution, group=group, start__gte=since, start__lt=until
        ).order_by("start").values_list("start", "lag", "lag_seconds", "status"):
            entry = steps.setdefault(_step_start(start, step), [0, 0.0, "NOTFOUND"])
            entry[0], entry[1] = max(entry[0], lag), max(entry[1], lag_s)
            if STATUS_SEVERITY.get(status, 0) > STATUS_SEVERITY.get(entry[2], 0):
                entry[2] = status
        keys = sorted(steps)
        return LagHistory(group, step, [datetime.fromtimestamp(s, UTC) for s in keys],
                          [steps[s][0] for s in keys], [steps[s][1] for s in keys], [steps[s][2] for s in keys])

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
        resolution, step = resolution_for(until - since)
        last: defaultdict[str, dict[int, float]] = defaultdict(dict)
        for broker, path, start, size in LogDirMetricPoint.objects.filter(
                resolution=resolution, start__gte=since, start__lt=until).order_by("start").values_list(
                "broker_id", "path", "start", "size_bytes"):
            last[f"broker {broker}: {path}"][_step_start(start, step)] = size
        return Rollup(step, [_series(name, points, since, until, step) for name, points in sorted(last.items())],
                      self._history_starts(LogDirMetricPoint))
