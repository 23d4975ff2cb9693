"""Lag metrics under the names existing dashboards and alerts query, in Prometheus's text format (0.0.4)
over the latest evaluation (series of retired groups and deleted topics vanish with them).

Written here rather than through prometheus-client's collectors: a round of 20,000 group partitions is
~160,000 series, which `generate_latest` (label validation per sample) renders in seconds; this writer
escapes each label value once per group, topic and partition and formats a line per series. `tests/
monitoring/test_prometheus.py` reads the output back with prometheus-client's parser.

Families (`render(snapshot, families)`):

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

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

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


def check_families(families: Iterable[str]) -> tuple[str, ...]:
    """The families, in FAMILIES order; ValueError naming any unknown one."""
    chosen = set(families)
    unknown = chosen - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown metric families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    return tuple(f for f in FAMILIES if f in chosen)


def render(snapshot: MetricsSnapshot, families: Iterable[str] = FAMILIES) -> bytes:
    """The chosen lag families of the snapshot (NOTFOUND groups skipped), as exposition text."""
    chosen = check_families(families)
    results = [r for r in snapshot.results if r.status is not Status.NOTFOUND]
    out: list[_Family] = []
    if "burrow" in chosen:
        out += _burrow(snapshot.cluster, results, snapshot.heads)
    if "kafka_exporter" in chosen:
        out += _kafka_exporter(results, snapshot.heads)
    if "kafka_lag_exporter" in chosen:
        out += _kafka_lag_exporter(snapshot.cluster, results, snapshot.heads)
    return "".join(family.text() for family in out).encode()


def render_health(stats: MonitorStats) -> bytes:
    """`strom_lag_monitor_*` (base units)."""
    def gauge(name: str, documentation: str, value: float) -> _Family:
        family = _Family(name, documentation)
        family.add("", value)
        return family

    def counter(name: str, documentation: str, value: int) -> _Family:
        family = _Family(name, documentation, "counter")
        family.add("", value)
        return family

    families = (
        gauge("strom_lag_monitor_offsets_topic_lag_records",
              "__consumer_offsets records the collector has not read yet", stats.offsets_topic_lag),
        counter("strom_lag_monitor_commits_stored_total", "Commits stored since start", stats.commits_stored),
        counter("strom_lag_monitor_records_undecodable_total", "__consumer_offsets records that did not decode",
                stats.records_undecodable),
        gauge("strom_lag_monitor_evaluation_duration_seconds", "Duration of the latest evaluation round",
              stats.evaluation_seconds),
        gauge("strom_lag_monitor_record_times_duration_seconds",
              "Time the latest round spent reading record times from the log", stats.record_times_seconds),
        gauge("strom_lag_monitor_last_evaluation_timestamp_seconds", "Unix time of the latest evaluation",
              stats.evaluated_at_seconds),
        gauge("strom_lag_monitor_groups", "Groups evaluated in the latest round", stats.groups),
        gauge("strom_lag_monitor_partitions", "Group partitions evaluated in the latest round", stats.partitions),
        gauge("strom_lag_monitor_lag_seconds_unknown_partitions",
              "Partitions with a commit whose lag in seconds was not known in the latest round",
              stats.lag_seconds_unknown),
    )
    return "".join(family.text() for family in families).encode()


class _Family:
    """One metric family: its HELP and TYPE lines and a line per series. `labels` given to `add` is the
    rendered label set without braces (`_label_set`), "" for none."""

    __slots__ = ("name", "documentation", "kind", "lines")

    def __init__(self, name: str, documentation: str, kind: str = "gauge") -> None:
        self.name, self.documentation, self.kind = name, documentation, kind
        self.lines: list[str] = []

    def add(self, labels: str, value: float) -> None:
        self.lines.append(f"{self.name}{{{labels}}} {value}\n" if labels else f"{self.name} {value}\n")

    def text(self) -> str:
        return f"# HELP {self.name} {self.documentation}\n# TYPE {self.name} {self.kind}\n" + "".join(self.lines)


@functools.lru_cache(maxsize=65_536)
def _escape(value: str) -> str:
    """A label value as the text format quotes it (cached: the same groups, topics and hosts recur every round)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _label_set(**labels: str) -> str:
    """name="value",… in the given order (values escaped)."""
    return ",".join(f'{name}="{_escape(value)}"' for name, value in labels.items())


def _topic_heads(family: _Family, heads: Mapping[str, Sequence[int]], prefix: str) -> None:
    """One series per partition head: `prefix` (a rendered label set ending in a comma, or "") + topic, partition."""
    for topic, offsets in heads.items():
        topic_labels = f'{prefix}topic="{_escape(topic)}",partition="'
        for partition, value in enumerate(offsets):
            family.add(f'{topic_labels}{partition}"', value)


def _burrow(cluster: str, results: Sequence[GroupResult], heads: Mapping[str, Sequence[int]]) -> list[_Family]:
    status = _Family("burrow_kafka_consumer_status", "Consumer group status (1 OK, 2 WARN, 3 ERR)")
    total = _Family("burrow_kafka_consumer_lag_total", "Sum of the partitions' current lag")
    lag = _Family("burrow_kafka_consumer_partition_lag", "Current lag of the partition")
    offset = _Family("burrow_kafka_consumer_current_offset", "Latest committed offset (full windows)")
    partition_status = _Family("burrow_kafka_topic_partition_status",
                               "Partition status (1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND; full windows)")
    for r in results:
        group_labels = _label_set(cluster=cluster, consumer_group=r.group)
        status.add(group_labels, int(r.status))
        total.add(group_labels, r.totallag)
        for p in r.partitions:
            labels = f'{group_labels},topic="{_escape(p.topic)}",partition="{p.partition}"'
            lag.add(labels, p.current_lag)
            if p.complete == 1.0 and p.end is not None:
                offset.add(labels, p.end.offset)
                partition_status.add(labels, int(p.status))
    head = _Family("burrow_kafka_topic_partition_offset", "Latest broker offset of the partition")
    _topic_heads(head, heads, _label_set(cluster=cluster) + ",")
    return [status, total, lag, offset, partition_status, head]


def _kafka_exporter(results: Sequence[GroupResult], heads: Mapping[str, Sequence[int]]) -> list[_Family]:
    offset = _Family("kafka_consumergroup_current_offset", "Committed offset (-1 without a commit)")
    lag = _Family("kafka_consumergroup_lag", "Log-end offset minus committed offset")
    offset_sum = _Family("kafka_consumergroup_current_offset_sum", "Sum of the committed offsets")
    lag_sum = _Family("kafka_consumergroup_lag_sum", "Sum of the partitions' lag")
    for r in results:
        by_topic: dict[str, list] = {}
        for p in r.partitions:
            by_topic.setdefault(p.topic, []).append(p)
        group = _escape(r.group)
        for topic, partitions in by_topic.items():
            if all(p.committed_offset is None for p in partitions):
                continue
            topic_labels = f'consumergroup="{group}",topic="{_escape(topic)}"'
            for p in partitions:
                labels = f'{topic_labels},partition="{p.partition}"'
                offset.add(labels, -1 if p.committed_offset is None else p.committed_offset)
                if p.lag is not None:
                    lag.add(labels, p.lag)
            offset_sum.add(topic_labels, sum(p.committed_offset or 0 for p in partitions))
            lag_sum.add(topic_labels, sum(p.lag or 0 for p in partitions))
    current = _Family("kafka_topic_partition_current_offset", "Log-end offset of the partition")
    _topic_heads(current, heads, "")
    counts = _Family("kafka_topic_partitions", "Partitions of the topic")
    for topic, offsets in heads.items():
        counts.add(_label_set(topic=topic), len(offsets))
    return [offset, lag, offset_sum, lag_sum, current, counts]


def _kafka_lag_exporter(cluster: str, results: Sequence[GroupResult],
                        heads: Mapping[str, Sequence[int]]) -> list[_Family]:
    offset = _Family("kafka_consumergroup_group_offset", "Last committed offset")
    lag = _Family("kafka_consumergroup_group_lag", "Log-end offset minus committed offset")
    seconds = _Family("kafka_consumergroup_group_lag_seconds", "Age of the oldest unconsumed record (0 when caught up)")
    max_lag = _Family("kafka_consumergroup_group_max_lag", "Highest partition lag of the group")
    max_seconds = _Family("kafka_consumergroup_group_max_lag_seconds", "Highest partition lag in seconds of the group")
    sum_lag = _Family("kafka_consumergroup_group_sum_lag", "Sum of the group's partition lags")
    topic_sum = _Family("kafka_consumergroup_group_topic_sum_lag", "Sum of the group's lag per topic")
    cluster_label = _escape(cluster)
    for r in results:
        with_commit = [p for p in r.partitions if p.committed_offset is not None]
        if not with_commit:
            continue
        group_labels = f'cluster_name="{cluster_label}",group="{_escape(r.group)}"'
        per_topic: dict[str, int] = {}
        for p in with_commit:
            values = (f'{group_labels},topic="{_escape(p.topic)}",partition="{p.partition}",'
                      f'member_host="{_escape(p.owner)}",consumer_id="",client_id="{_escape(p.client_id)}"')
            offset.add(values, p.committed_offset)
            lag.add(values, p.current_lag)
            if p.lag_seconds is not None:
                seconds.add(values, p.lag_seconds)
            per_topic[p.topic] = per_topic.get(p.topic, 0) + p.current_lag
        max_lag.add(group_labels, max(p.current_lag for p in with_commit))
        if r.lag_seconds is not None:
            max_seconds.add(group_labels, r.lag_seconds)
        sum_lag.add(group_labels, sum(per_topic.values()))
        for topic, value in per_topic.items():
            topic_sum.add(f'{group_labels},topic="{_escape(topic)}"', value)
    latest = _Family("kafka_partition_latest_offset", "Log-end offset of the partition")
    _topic_heads(latest, heads, f'cluster_name="{cluster_label}",')
    return [offset, lag, seconds, max_lag, max_seconds, sum_lag, topic_sum, latest]
