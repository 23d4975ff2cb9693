"""Turning consumed `__strom_metrics` and `__strom_lag_samples` records into rollups, one transaction per batch.

`ingest(records)` applies a batch of records (in partition order) and advances `ConsumedOffset` in the same
transaction: records below a partition's stored offset were applied before and are skipped, so replaying a
batch after a crash changes nothing. Formats: README ("Broker metrics" and the lag samples contract).
"""

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from . import rollup
from .models import (
    BrokerMetricPoint,
    ConsumedOffset,
    CounterState,
    LagMetricPoint,
    LogDirMetricPoint,
    PartitionReplicaSize,
    TopicMetricPoint,
    TopicReplicaSize,
    TopicTotals,
)

log = logging.getLogger(__name__)

METRICS_TOPIC = "__strom_metrics"
LAG_TOPIC = "__strom_lag_samples"
BROKER_COUNTERS = ("bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out", "messages_in",
                   "produce_requests", "fetch_requests", "failed_produce_requests", "failed_fetch_requests")
BROKER_GAUGES = ("partitions", "leaders", "under_replicated", "offline_replicas", "connections")
TOPIC_COUNTERS = ("bytes_in", "bytes_out", "messages_in")
STATUS_SEVERITY = {"NOTFOUND": 0, "OK": 1, "REWIND": 2, "WARN": 3, "STALL": 4, "STOP": 5, "ERR": 6}


@dataclass(frozen=True, slots=True)
class SampleRecord:
    topic: str
    partition: int
    offset: int
    value: bytes | None


def to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


class _Batch:
    """Rollup rows touched by one batch, merged in memory, then written with one upsert per model."""

    def __init__(self) -> None:
        self.states: dict[tuple[int, str], rollup.CounterReading] = {}
        self.followed: dict[int, bool] = {}
        self.states_loaded: set[int] = set()
        self.brokers: dict[tuple[int, int, int], dict] = defaultdict(dict)
        self.topics: dict[tuple[int, str, int], dict] = defaultdict(dict)
        self.log_dirs: dict[tuple[int, int, str, int], dict] = {}
        self.lag: dict[tuple[int, str, int], dict] = {}
        self.replica_sizes: dict[tuple[int, str], tuple[int, int, int]] = {}
        self.partition_sizes: dict[tuple[int, str, int], dict] = {}
        self.topic_size_ts: dict[str, int] = {}

    # --- counter state ---------------------------------------------------------------------------------

    def _state(self, broker: int, topic: str) -> rollup.CounterReading | None:
        if broker not in self.states_loaded:
            for row in CounterState.objects.filter(broker_id=broker):
                self.states[(broker, row.topic)] = rollup.CounterReading(row.started_ms, row.ts_ms, row.values)
                if not row.topic:
                    self.followed[broker] = row.followed
            self.states_loaded.add(broker)
        return self.states.get((broker, topic))

    def _deltas(self, broker: int, topic: str, value: dict, names: Iterable[str]
                ) -> tuple[dict[str, int], int] | None:
        counters = value["counters"]
        current = rollup.CounterReading(value["started"], value["ts"], {n: int(counters.get(n, 0)) for n in names})
        previous = self._state(broker, topic)
        if previous is not None and previous.started_ms == current.started_ms and previous.ts_ms >= current.ts_ms:
            return None  # an older or repeated reading (a split topic's second record)
        if topic:
            broker_state = self._state(broker, "")
            follows = (broker_state is not None and broker_state.started_ms == current.started_ms
                       and self.followed.get(broker, False))
        else:
            follows = value["since"] == value["started"]
            if previous is None or previous.started_ms != current.started_ms:
                self.followed[broker] = follows
        self.states[(broker, topic)] = current
        found = rollup.counter_deltas(previous, current, follows)
        if found is None:
            return None
        deltas, interval_start = found
        return deltas, max(interval_start, value["since"])

    # --- records ---------------------------------------------------------------------------------------

    def add_broker(self, value: dict) -> None:
        broker, ts = value["broker"], value["ts"]
        found = self._deltas(broker, "", value, BROKER_COUNTERS)
        for resolution in rollup.RESOLUTIONS_S:
            if found is not None:
                for bucket, parts in rollup.spread(found[0], found[1], ts, resolution).items():
                    point = self.brokers[(resolution, broker, bucket)]
                    for name, part in parts.items():
                        point[name] = point.get(name, 0) + part
            bucket = rollup.sample_bucket_ms(ts, resolution)
            point = self.brokers[(resolution, broker, bucket)]
            point.update({f"gauge:{name}": value["gauges"].get(name) for name in BROKER_GAUGES})
            for log_dir in value.get("log_dirs", []):
                self.log_dirs[(resolution, broker, log_dir["path"], bucket)] = {
                    "size_bytes": log_dir["size_bytes"], "total_bytes": log_dir["total_bytes"],
                    "free_bytes": log_dir["free_bytes"]}

    def add_topic(self, value: dict) -> None:
        broker, topic, ts = value["broker"], value["topic"], value["ts"]
        size = self.replica_sizes.get((broker, topic))
        count = len(value.get("partitions", []))
        if size is not None and size[2] == ts:
            count += size[1]  # another slice of the same reading
        self.replica_sizes[(broker, topic)] = (value["size_bytes"], count, ts)
        self.topic_size_ts[topic] = max(ts, self.topic_size_ts.get(topic, 0))
        for part in value.get("partitions", []):
            self.partition_sizes[(broker, topic, part["partition"])] = {
                "log_dir": part["log_dir"], "size_bytes": part["size_bytes"], "leader": bool(part["leader"]),
                "log_start_offset": part["log_start_offset"], "log_end_offset": part["log_end_offset"],
                "sampled_at": to_datetime(ts)}
        found = self._deltas(broker, topic, value, TOPIC_COUNTERS)
        if found is None:
            return
        for resolution in rollup.RESOLUTIONS_S:
            for bucket, parts in rollup.spread(found[0], found[1], ts, resolution).items():
                point = self.topics[(resolution, topic, bucket)]
                for name, part in parts.items():
                    point[name] = point.get(name, 0) + part

    def add_lag(self, value: dict) -> None:
        group, ts = value["group"], int(value["ts"])
        lag, lag_s = value.get("lag") or 0, value.get("lag_seconds") or 0.0
        status = value.get("group_status") or "NOTFOUND"
        for resolution in rollup.RESOLUTIONS_S[1:]:  # lag is evaluated every few tens of seconds
            key = (resolution, group, rollup.bucket_start_ms(ts, resolution))
            point = self.lag.get(key)
            if point is None:
                row = LagMetricPoint.objects.filter(resolution=resolution, group=group,
                                                    start=to_datetime(key[2])).first()
                point = self.lag[key] = ({"lag": row.lag, "lag_seconds": row.lag_seconds, "status": row.status,
                                          "last_ts_ms": row.last_ts_ms, "last_total": row.last_total}
                                         if row else {"lag": 0, "lag_seconds": 0.0, "status": status,
                                                      "last_ts_ms": 0, "last_total": 0})
            if ts == point["last_ts_ms"]:
                point["last_total"] += lag
            elif ts > point["last_ts_ms"]:
                point["last_ts_ms"], point["last_total"] = ts, lag
            point["lag"] = max(point["lag"], point["last_total"])
            point["lag_seconds"] = max(point["lag_seconds"], float(lag_s))
            if STATUS_SEVERITY.get(status, 0) > STATUS_SEVERITY.get(point["status"], 0):
                point["status"] = status

    # --- writing ---------------------------------------------------------------------------------------

    def write(self) -> None:
        self._write_states()
        self._write_sizes()
        _upsert_additive(BrokerMetricPoint, ("resolution", "broker_id", "start"), self.brokers, BROKER_COUNTERS,
                         BROKER_GAUGES)
        _upsert_additive(TopicMetricPoint, ("resolution", "topic", "start"), self.topics, TOPIC_COUNTERS,
                         ("size_bytes",))
        if self.log_dirs:
            LogDirMetricPoint.objects.bulk_create(
                [LogDirMetricPoint(resolution=r, broker_id=b, path=p, start=to_datetime(s), **v)
                 for (r, b, p, s), v in self.log_dirs.items()],
                update_conflicts=True, unique_fields=["resolution", "broker_id", "path", "start"],
                update_fields=["size_bytes", "total_bytes", "free_bytes"])
        if self.lag:
            LagMetricPoint.objects.bulk_create(
                [LagMetricPoint(resolution=r, group=g, start=to_datetime(s), **v) for (r, g, s), v in self.lag.items()],
                update_conflicts=True, unique_fields=["resolution", "group", "start"],
                update_fields=["lag", "lag_seconds", "status", "last_ts_ms", "last_total"])

    def _write_states(self) -> None:
        if self.states:
            CounterState.objects.bulk_create(
                [CounterState(broker_id=b, topic=t, started_ms=s.started_ms, ts_ms=s.ts_ms, values=dict(s.values),
                              followed=not t and self.followed.get(b, False))
                 for (b, t), s in self.states.items()],
                update_conflicts=True, unique_fields=["broker_id", "topic"],
                update_fields=["started_ms", "ts_ms", "values", "followed"])

    def _write_sizes(self) -> None:
        """Latest replica sizes, then each touched topic's total over brokers into its newest buckets."""
        if not self.replica_sizes:
            return
        PartitionReplicaSize.objects.bulk_create(
            [PartitionReplicaSize(broker_id=b, topic=t, partition=p, **v)
             for (b, t, p), v in self.partition_sizes.items()],
            update_conflicts=True, unique_fields=["broker_id", "topic", "partition"],
            update_fields=["log_dir", "size_bytes", "leader", "log_start_offset", "log_end_offset", "sampled_at"])
        TopicReplicaSize.objects.bulk_create(
            [TopicReplicaSize(broker_id=b, topic=t, size_bytes=size, partitions=count, sampled_at=to_datetime(ts))
             for (b, t), (size, count, ts) in self.replica_sizes.items()],
            update_conflicts=True, unique_fields=["broker_id", "topic"],
            update_fields=["size_bytes", "partitions", "sampled_at"])
        totals = refresh_topic_totals(self.topic_size_ts)
        for topic, ts in self.topic_size_ts.items():
            for resolution in rollup.RESOLUTIONS_S:
                self.topics[(resolution, topic, rollup.sample_bucket_ms(ts, resolution))]["gauge:size_bytes"] = \
                    totals[topic]


def refresh_topic_totals(topics: Iterable[str]) -> dict[str, int]:
    """Recompute `TopicTotals` of `topics` from the stored replica sizes (two aggregate queries, one upsert);
    returns each topic's size in bytes (0 for a topic without replica sizes)."""
    topics = list(topics)
    sizes: dict[str, int] = dict.fromkeys(topics, 0)
    for topic, size in TopicReplicaSize.objects.filter(topic__in=topics).values_list("topic", "size_bytes"):
        sizes[topic] += size
    messages = dict(PartitionReplicaSize.objects.filter(topic__in=topics, leader=True).order_by().values("topic")
                    .annotate(messages=Sum(F("log_end_offset") - F("log_start_offset")))
                    .values_list("topic", "messages"))
    now = timezone.now()
    TopicTotals.objects.bulk_create(
        [TopicTotals(topic=t, size_bytes=sizes[t], messages=messages.get(t), updated_at=now) for t in topics],
        update_conflicts=True, unique_fields=["topic"], update_fields=["size_bytes", "messages", "updated_at"])
    return sizes


def _upsert_additive(model, key_fields: tuple[str, str, str], points: dict, counters: Iterable[str],
                     gauges: Iterable[str]) -> None:
    """Add the batch's counter parts to the stored rows, set the gauges it sampled; one upsert."""
    if not points:
        return
    counters, gauges = tuple(counters), tuple(gauges)
    resolution_field, entity_field, _ = key_fields
    existing = {}
    by_resolution: dict[int, set] = defaultdict(set)
    for resolution, entity, _start in points:
        by_resolution[resolution].add(entity)
    for resolution, entities in by_resolution.items():
        starts = [to_datetime(s) for r, _e, s in points if r == resolution]
        rows = model.objects.filter(**{resolution_field: resolution, f"{entity_field}__in": list(entities),
                                       "start__gte": min(starts), "start__lte": max(starts)})
        for row in rows:
            existing[(resolution, getattr(row, entity_field), int(row.start.timestamp() * 1000))] = row
    rows = []
    for (resolution, entity, start), values in points.items():
        row = existing.get((resolution, entity, start)) or model(
            **{resolution_field: resolution, entity_field: entity, "start": to_datetime(start)})
        for name in counters:
            setattr(row, name, (getattr(row, name) or 0) + values.get(name, 0))
        for name in gauges:
            if f"gauge:{name}" in values:
                setattr(row, name, values[f"gauge:{name}"])
        rows.append(row)
    model.objects.bulk_create(rows, update_conflicts=True, unique_fields=list(key_fields),
                              update_fields=[*counters, *gauges])


def ingest(records: list[SampleRecord]) -> int:
    """Apply `records` (each partition's in offset order) once; returns how many were new."""
    if not records:
        return 0
    with transaction.atomic():
        partitions = {(r.topic, r.partition) for r in records}
        stored = {(o.topic, o.partition): o.next_offset
                  for o in ConsumedOffset.objects.select_for_update().filter(
                      topic__in={t for t, _ in partitions}, partition__in={p for _, p in partitions})}
        batch = _Batch()
        next_offsets: dict[tuple[str, int], int] = {}
        applied = 0
        for record in records:
            key = (record.topic, record.partition)
            if record.offset < stored.get(key, 0):
                continue
            next_offsets[key] = record.offset + 1
            applied += 1
            try:
                value = json.loads(record.value) if record.value is not None else None
                if record.topic == LAG_TOPIC:
                    batch.add_lag(value)
                elif value.get("type") == "broker":
                    batch.add_broker(value)
                elif value.get("type") == "topic":
                    batch.add_topic(value)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                log.warning("skipping malformed record %s-%d@%d: %s", *key, record.offset, exc)
        batch.write()
        if next_offsets:
            ConsumedOffset.objects.bulk_create(
                [ConsumedOffset(topic=t, partition=p, next_offset=o) for (t, p), o in next_offsets.items()],
                update_conflicts=True, unique_fields=["topic", "partition"], update_fields=["next_offset"])
    return applied
