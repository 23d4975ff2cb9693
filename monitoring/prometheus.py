"""Lag metrics under the names existing dashboards and alerts query, as a prometheus-client custom
collector over the latest evaluation (series of retired groups and deleted topics vanish with them).

Families (`LagMetrics(families=…)`):

- "burrow" (Burrow's `/metrics`): `burrow_kafka_consumer_status`, `burrow_kafka_consumer_lag_total`
  {cluster, consumer_group}; `burrow_kafka_consumer_partition_lag` (every partition),
  `burrow_kafka_consumer_current_offset` and `burrow_kafka_topic_partition_status` (only partitions with a
  full window) {cluster, consumer_group, topic, partition}; `burrow_kafka_topic_partition_offset`
  {cluster, topic, partition}. Status codes are Burrow's (NOTFOUND 0 … REWIND 6); NOTFOUND groups skipped.
- "kafka_exporter" (danielqsj/kafka_exporter, Grafana 7589, Strimzi): `kafka_consumergroup_current_offset`
  (-1 without a commit, as there), `kafka_consumergroup_lag` (only partitions with a commit: Strom never
  reports a negative lag) {consumergroup, topic, partition}; `kafka_consumergroup_current_offset_sum`,
  `kafka_consumergroup_lag_sum` {consumergroup, topic}; `kafka_topic_partition_current_offset`
  {topic, partition}; `kafka_topic_partitions` {topic}. A topic none of whose partitions has a commit is
  skipped for the group, as there.
- "kafka_lag_exporter" (seglo/kafka-lag-exporter, time lag): `kafka_consumergroup_group_offset`,
  `_group_lag`, `_group_lag_seconds` {cluster_name, group, topic, partition, member_host, consumer_id,
  client_id}; `_group_max_lag`, `_group_max_lag_seconds`, `_group_sum_lag` {cluster_name, group};
  `_group_topic_sum_lag` {cluster_name, group, topic}; `kafka_partition_latest_offset`
  {cluster_name, topic, partition}. Lag seconds are read from the log, not interpolated.

Plus the monitor's own health under `strom_lag_monitor_*` (base units).
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitoring.model import GroupResult, Status

FAMILIES = ("burrow", "kafka_exporter", "kafka_lag_exporter")


@dataclass(frozen=True)
class MonitorStats:
    """The monitor's own health for `strom_lag_monitor_*`."""

    offsets_topic_lag: int = 0          # __consumer_offsets records not read yet
    commits_stored: int = 0             # since start
    records_undecodable: int = 0        # since start
    evaluation_seconds: float = 0.0     # duration of the latest round
    record_times_seconds: float = 0.0   # of which reading record times (lag seconds)
    evaluated_at_seconds: float = 0.0   # unix time of the latest round
    groups: int = 0
    partitions: int = 0
    lag_seconds_unknown: int = 0        # partitions with a commit but no lag in seconds in the latest round


@dataclass(frozen=True)
class MetricsSnapshot:
    cluster: str
    results: Sequence[GroupResult]
    heads: Mapping[str, Sequence[int]]  # topic → latest head per partition
    stats: MonitorStats


class LagMetrics(Collector):
    """Register with a `CollectorRegistry`; `snapshot` is called on every scrape."""

    def __init__(self, snapshot: Callable[[], MetricsSnapshot], families: Iterable[str] = FAMILIES) -> None:
        self._snapshot = snapshot
        self.families = tuple(families)
        unknown = set(self.families) - set(FAMILIES)
        if unknown:
            raise ValueError(f"unknown metric families {sorted(unknown)}; known: {', '.join(FAMILIES)}")

    def collect(self) -> Iterator[Metric]:
        snapshot = self._snapshot()
        results = [r for r in snapshot.results if r.status is not Status.NOTFOUND]
        if "burrow" in self.families:
            yield from _burrow(snapshot.cluster, results, snapshot.heads)
        if "kafka_exporter" in self.families:
            yield from _kafka_exporter(results, snapshot.heads)
        if "kafka_lag_exporter" in self.families:
            yield from _kafka_lag_exporter(snapshot.cluster, results, snapshot.heads)
        yield from _health(snapshot.stats)


def _burrow(cluster: str, results: Sequence[GroupResult], heads: Mapping[str, Sequence[int]]) -> Iterator[Metric]:
    group_labels = ["cluster", "consumer_group"]
    partition_labels = [*group_labels, "topic", "partition"]
    status = GaugeMetricFamily("burrow_kafka_consumer_status", "Consumer group status (1 OK, 2 WARN, 3 ERR)",
                               labels=group_labels)
    total = GaugeMetricFamily("burrow_kafka_consumer_lag_total", "Sum of the partitions' current lag",
                              labels=group_labels)
    lag = GaugeMetricFamily("burrow_kafka_consumer_partition_lag", "Current lag of the partition",
                            labels=partition_labels)
    offset = GaugeMetricFamily("burrow_kafka_consumer_current_offset", "Latest committed offset (full windows)",
                               labels=partition_labels)
    partition_status = GaugeMetricFamily("burrow_kafka_topic_partition_status",
                                         "Partition status (1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND; full windows)",
                                         labels=partition_labels)
    for r in results:
        status.add_metric([cluster, r.group], int(r.status))
        total.add_metric([cluster, r.group], r.totallag)
        for p in r.partitions:
            labels = [cluster, r.group, p.topic, str(p.partition)]
            lag.add_metric(labels, p.current_lag)
            if p.complete == 1.0 and p.end is not None:
                offset.add_metric(labels, p.end.offset)
                partition_status.add_metric(labels, int(p.status))
    head = GaugeMetricFamily("burrow_kafka_topic_partition_offset", "Latest broker offset of the partition",
                             labels=["cluster", "topic", "partition"])
    for topic, offsets in heads.items():
        for partition, value in enumerate(offsets):
            head.add_metric([cluster, topic, str(partition)], value)
    yield from (status, total, lag, offset, partition_status, head)


def _kafka_exporter(results: Sequence[GroupResult], heads: Mapping[str, Sequence[int]]) -> Iterator[Metric]:
    labels = ["consumergroup", "topic", "partition"]
    offset = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset (-1 without a commit)",
                               labels=labels)
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "Log-end offset minus committed offset", labels=labels)
    offset_sum = GaugeMetricFamily("kafka_consumergroup_current_offset_sum", "Sum of the committed offsets",
                                   labels=["consumergroup", "topic"])
    lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Sum of the partitions' lag",
                                labels=["consumergroup", "topic"])
    for r in results:
        by_topic: dict[str, list] = {}
        for p in r.partitions:
            by_topic.setdefault(p.topic, []).append(p)
        for topic, partitions in by_topic.items():
            if all(p.committed_offset is None for p in partitions):
                continue
            for p in partitions:
                offset.add_metric([r.group, topic, str(p.partition)], -1 if p.committed_offset is None
                                  else p.committed_offset)
                if p.lag is not None:
                    lag.add_metric([r.group, topic, str(p.partition)], p.lag)
            offset_sum.add_metric([r.group, topic], sum(p.committed_offset or 0 for p in partitions))
            lag_sum.add_metric([r.group, topic], sum(p.lag or 0 for p in partitions))
    current = GaugeMetricFamily("kafka_topic_partition_current_offset", "Log-end offset of the partition",
                                labels=["topic", "partition"])
    counts = GaugeMetricFamily("kafka_topic_partitions", "Partitions of the topic", labels=["topic"])
    for topic, offsets in heads.items():
        counts.add_metric([topic], len(offsets))
        for partition, value in enumerate(offsets):
            current.add_metric([topic, str(partition)], value)
    yield from (offset, lag, offset_sum, lag_sum, current, counts)


def _kafka_lag_exporter(cluster: str, results: Sequence[GroupResult],
                        heads: Mapping[str, Sequence[int]]) -> Iterator[Metric]:
    labels = ["cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id"]
    offset = GaugeMetricFamily("kafka_consumergroup_group_offset", "Last committed offset", labels=labels)
    lag = GaugeMetricFamily("kafka_consumergroup_group_lag", "Log-end offset minus committed offset", labels=labels)
    seconds = GaugeMetricFamily("kafka_consumergroup_group_lag_seconds",
                                "Age of the oldest unconsumed record (0 when caught up)", labels=labels)
    max_lag = GaugeMetricFamily("kafka_consumergroup_group_max_lag", "Highest partition lag of the group",
                                labels=["cluster_name", "group"])
    max_seconds = GaugeMetricFamily("kafka_consumergroup_group_max_lag_seconds",
                                    "Highest partition lag in seconds of the group", labels=["cluster_name", "group"])
    sum_lag = GaugeMetricFamily("kafka_consumergroup_group_sum_lag", "Sum of the group's partition lags",
                                labels=["cluster_name", "group"])
    topic_sum = GaugeMetricFamily("kafka_consumergroup_group_topic_sum_lag", "Sum of the group's lag per topic",
                                  labels=["cluster_name", "group", "topic"])
    for r in results:
        per_topic: dict[str, int] = {}
        with_commit = [p for p in r.partitions if p.committed_offset is not None]
        for p in with_commit:
            values = [cluster, r.group, p.topic, str(p.partition), p.owner, "", p.client_id]
            offset.add_metric(values, p.committed_offset)
            lag.add_metric(values, p.current_lag)
            if p.lag_seconds is not None:
                seconds.add_metric(values, p.lag_seconds)
            per_topic[p.topic] = per_topic.get(p.topic, 0) + p.current_lag
        if not with_commit:
            continue
        max_lag.add_metric([cluster, r.group], max(p.current_lag for p in with_commit))
        if r.lag_seconds is not None:
            max_seconds.add_metric([cluster, r.group], r.lag_seconds)
        sum_lag.add_metric([cluster, r.group], sum(per_topic.values()))
        for topic, value in per_topic.items():
            topic_sum.add_metric([cluster, r.group, topic], value)
    latest = GaugeMetricFamily("kafka_partition_latest_offset", "Log-end offset of the partition",
                               labels=["cluster_name", "topic", "partition"])
    for topic, offsets in heads.items():
        for partition, value in enumerate(offsets):
            latest.add_metric([cluster, topic, str(partition)], value)
    yield from (offset, lag, seconds, max_lag, max_seconds, sum_lag, topic_sum, latest)


def _health(stats: MonitorStats) -> Iterator[Metric]:
    def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, documentation, value=value)

    yield gauge("strom_lag_monitor_offsets_topic_lag_records",
                "__consumer_offsets records the collector has not read yet", stats.offsets_topic_lag)
    yield CounterMetricFamily("strom_lag_monitor_commits_stored", "Commits stored since start",
                              value=stats.commits_stored)
    yield CounterMetricFamily("strom_lag_monitor_records_undecodable",
                              "__consumer_offsets records that did not decode", value=stats.records_undecodable)
    yield gauge("strom_lag_monitor_evaluation_duration_seconds", "Duration of the latest evaluation round",
                stats.evaluation_seconds)
    yield gauge("strom_lag_monitor_record_times_duration_seconds",
                "Time the latest round spent reading record times from the log", stats.record_times_seconds)
    yield gauge("strom_lag_monitor_last_evaluation_timestamp_seconds", "Unix time of the latest evaluation",
                stats.evaluated_at_seconds)
    yield gauge("strom_lag_monitor_groups", "Groups evaluated in the latest round", stats.groups)
    yield gauge("strom_lag_monitor_partitions", "Group partitions evaluated in the latest round", stats.partitions)
    yield gauge("strom_lag_monitor_lag_seconds_unknown_partitions",
                "Partitions with a commit whose lag in seconds was not known in the latest round",
                stats.lag_seconds_unknown)
