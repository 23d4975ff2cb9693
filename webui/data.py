"""What the dashboard reads, as plain typed rows, and the interface of whoever provides them.

Times are timezone-aware datetimes (UTC from the provider; pages convert them to the viewer's zone). Rates
are per second, sizes bytes, lag records or seconds.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

ThroughputMetric = Literal["bytes_in", "bytes_out", "messages_in"]
HeatmapMetric = Literal["leaders", "replicas", "out_of_sync", "size_bytes"]


@dataclass(frozen=True)
class ClusterSummary:
    brokers_total: int
    brokers_running: int
    topics: int
    partitions: int
    offline_partitions: int
    under_replicated_partitions: int
    controller_epoch: int
    controller_id: int = -1
    """The broker advertised as controller (the lowest running broker id); -1: none."""
    open_alerts: int | None = None
    """None while alerting is not set up (the alerts issue)."""


@dataclass(frozen=True)
class BrokerLoad:
    """Partition counts a broker carries: as leader and as any replica."""

    broker_id: int
    state: str
    leaders: int
    replicas: int


@dataclass(frozen=True)
class Series:
    """One line of a chart: `values[i]` at `times[i]`."""

    name: str
    times: list[datetime]
    values: list[float | None]
    """None: no data for that step (drawn as a gap)."""


@dataclass(frozen=True)
class Rollup:
    """Series read from the rollups over a range; `step_s` is the width of one point."""

    step_s: int
    series: list[Series]
    history_starts: datetime | None = None
    """The oldest point kept at all (None: no history has been recorded yet)."""


@dataclass(frozen=True)
class LagHistory:
    group: str
    step_s: int
    times: list[datetime]
    lag: list[float]
    """Records behind, summed over the group's partitions (the largest total in each step)."""
    lag_seconds: list[float]
    status: list[str]
    """Burrow's group status (worst in each step): OK, WARN, ERR, STOP, STALL, REWIND, NOTFOUND."""


@dataclass(frozen=True)
class Heatmap:
    brokers: list[int]
    topics: list[str]
    z: list[list[float]]
    """z[t][b]: the metric of topic `topics[t]` on broker `brokers[b]`."""
    topics_total: int
    """Topics in the cluster (the map shows the largest `len(topics)` of them)."""


@dataclass(frozen=True)
class LogDirUsage:
    broker_id: int
    path: str
    used_bytes: int
    """Bytes of partition logs in the dir."""
    capacity_bytes: int
    free_bytes: int
    growth_bytes_per_day: float | None
    """From the history (None: less than an hour of it)."""
    sampled_at: datetime

    @property
    def days_until_full(self) -> float | None:
        if not self.growth_bytes_per_day or self.growth_bytes_per_day <= 0:
            return None
        return self.free_bytes / self.growth_bytes_per_day


@dataclass(frozen=True)
class Reassignment:
    topic: str
    partition: int
    moved_bytes: int
    total_bytes: int
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)


class DashboardDataSource(Protocol):
    """Provided by the control plane; every call returns the current state. Ranges are [since, until)."""

    def cluster_summary(self) -> ClusterSummary: ...

    def broker_load(self) -> list[BrokerLoad]: ...

    def cluster_throughput(self, since: datetime, until: datetime) -> Rollup:
        """Cluster-wide bytes in and bytes out per second (series "bytes in", "bytes out")."""

    def broker_throughput(self, metric: ThroughputMetric, since: datetime, until: datetime) -> Rollup:
        """`metric` per second, one series per broker ("broker N")."""

    def topic_throughput(self, metric: ThroughputMetric, since: datetime, until: datetime, top: int) -> Rollup:
        """`metric` per second of the `top` topics with the most of it in the range, one series each (internal
        `__` topics left out)."""

    def lag_groups(self) -> list[str]:
        """Groups with lag history (empty until the lag monitor publishes samples)."""

    def lag_history(self, group: str, since: datetime, until: datetime) -> LagHistory: ...

    def partition_heatmap(self, metric: HeatmapMetric, top: int) -> Heatmap: ...

    def disk_usage(self) -> list[LogDirUsage]: ...

    def disk_history(self, since: datetime, until: datetime) -> Rollup:
        """Used bytes per log dir ("broker N: /path")."""

    def reassignments(self) -> list[Reassignment] | None:
        """Reassignments in progress; None while this Strom cannot reassign partitions (issue 13)."""
