"""Ingesting `__strom_metrics` / `__strom_lag_samples` records into rollups: exact byte totals at every
resolution, a broker restart, a publishing gap, topics absent from rounds in which they did not change,
replays after a crash (nothing counted twice), and lag per group."""

import json
from datetime import UTC, datetime

import pytest
from django.db.models import Sum

from controlplane.metrics.ingest import LAG_TOPIC, METRICS_TOPIC, SampleRecord, ingest, to_datetime
from controlplane.metrics.models import (
    BrokerMetricPoint,
    LagMetricPoint,
    LogDirMetricPoint,
    PartitionReplicaSize,
    TopicMetricPoint,
    TopicTotals,
)
from controlplane.metrics.prune import prune_points

pytestmark = pytest.mark.django_db
T0 = 1_699_999_200_000
COUNTERS = ("bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out", "messages_in",
            "bytes_rejected", "produce_requests", "fetch_requests", "failed_produce_requests", "failed_fetch_requests")


class BrokerStream:
    """Records as broker `broker_id` would publish them (partition = broker id, consecutive offsets)."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.offset = 0
        self.started = T0
        self.since = T0

    def _record(self, value: dict) -> SampleRecord:
        record = SampleRecord(METRICS_TOPIC, self.broker_id % 3, self.offset, json.dumps(value).encode())
        self.offset += 1
        return record

    def round(self, ts: int, totals: dict, topics: dict[str, tuple[int, int]]) -> list[SampleRecord]:
        """One round at `ts`: broker totals (bytes_in, messages_in) and topics {name: (bytes_in, size)}."""
        head = {"v": 1, "cluster": "c", "broker": self.broker_id, "ts": ts, "since": self.since,
                "started": self.started}
        counters = dict.fromkeys(COUNTERS, 0) | totals
        records = [self._record({**head, "type": "broker", "counters": counters, "requests": {},
                                 "gauges": {"partitions": 4, "leaders": 2, "under_replicated": 1,
                                            "offline_replicas": 0, "connections": 7},
                                 "log_dirs": [{"path": "/d", "online": True, "size_bytes": 100 + ts % 1000,
                                               "total_bytes": 10_000, "free_bytes": 5_000}]})]
        for topic, (bytes_in, size) in topics.items():
            records.append(self._record({**head, "type": "topic", "topic": topic,
                                         "counters": dict.fromkeys(COUNTERS, 0) | {"bytes_in": bytes_in},
                                         "size_bytes": size, "partitions": [
                                             {"partition": 0, "size_bytes": size, "log_start_offset": 0,
                                              "log_end_offset": bytes_in, "leader": self.broker_id == 1,
                                              "log_dir": f"/d{self.broker_id}"}]}))
        self.since = ts
        return records

    def restart(self, at: int) -> None:
        self.started = self.since = at


def total(model, resolution, field="bytes_in", **filters) -> int:
    return model.objects.filter(resolution=resolution, **filters).aggregate(s=Sum(field))["s"] or 0


def test_bytes_add_up_at_every_resolution_across_a_restart_and_a_gap():
    broker = BrokerStream(1)
    records = broker.round(T0 + 10_000, {"bytes_in": 1000}, {"a": (1000, 50)})
    records += broker.round(T0 + 20_000, {"bytes_in": 3000}, {"a": (3000, 80)})
    records += broker.round(T0 + 30_000, {"bytes_in": 3000}, {})            # "a" unchanged: absent
    broker.since = T0 + 30_000
    # publishing failed at 40 s and 50 s; the 60 s round covers them
    records += broker.round(T0 + 60_000, {"bytes_in": 9000}, {"a": (9000, 200)})
    broker.restart(T0 + 65_000)                                            # counters start again at 0
    records += broker.round(T0 + 70_000, {"bytes_in": 500}, {"a": (500, 210)})
    assert ingest(records) == len(records)
    produced = 9000 + 500
    for resolution in (10, 60, 3600):
        assert total(BrokerMetricPoint, resolution, broker_id=1) == produced
        assert total(TopicMetricPoint, resolution, topic="a") == produced
    # the gap's 6000 bytes are spread over the three 10 s buckets [30, 60) s, 2000 each
    gap = BrokerMetricPoint.objects.filter(resolution=10, start__gte=datetime.fromtimestamp((T0 + 30_000) / 1000, UTC),
                                           start__lt=datetime.fromtimestamp((T0 + 60_000) / 1000, UTC))
    assert sorted(p.bytes_in for p in gap) == [2000, 2000, 2000]
    latest = BrokerMetricPoint.objects.filter(resolution=60).order_by("-start").first()
    assert (latest.partitions, latest.leaders, latest.under_replicated, latest.connections) == (4, 2, 1, 7)
    assert TopicMetricPoint.objects.filter(resolution=3600).get().size_bytes == 210
    assert LogDirMetricPoint.objects.filter(resolution=10).count() == 5


def test_a_replayed_batch_changes_nothing():
    broker = BrokerStream(2)
    first = broker.round(T0 + 10_000, {"bytes_in": 100}, {"t": (100, 1)})
    second = broker.round(T0 + 20_000, {"bytes_in": 400}, {"t": (400, 2)})
    ingest(first)
    ingest(first + second)   # the consumer crashed before committing: it reads `first` again
    ingest(second)
    assert total(BrokerMetricPoint, 60, broker_id=2) == 400
    assert total(TopicMetricPoint, 60, topic="t") == 400


def test_topic_sizes_add_up_over_brokers_and_traffic_over_topics():
    one, two = BrokerStream(1), BrokerStream(2)
    ingest(one.round(T0 + 10_000, {"bytes_in": 10}, {"t": (10, 1000)}) +
           two.round(T0 + 10_000, {"bytes_in": 20}, {"t": (20, 1500), "u": (0, 5)}))
    point = TopicMetricPoint.objects.get(resolution=10, topic="t")
    assert (point.bytes_in, point.size_bytes) == (30, 2500)
    assert TopicMetricPoint.objects.get(resolution=10, topic="u").bytes_in == 0


def test_each_replicas_latest_size_is_kept_for_the_retention_report():
    one, two = BrokerStream(1), BrokerStream(2)
    ingest(one.round(T0 + 10_000, {}, {"t": (10, 1000)}) + two.round(T0 + 10_000, {}, {"t": (20, 1500)}))
    ingest(one.round(T0 + 20_000, {}, {"t": (30, 1200)}))
    replicas = PartitionReplicaSize.objects.order_by("broker_id").values_list(
        "broker_id", "topic", "partition", "log_dir", "size_bytes", "leader", "log_end_offset")
    assert list(replicas) == [(1, "t", 0, "/d1", 1200, True, 30), (2, "t", 0, "/d2", 1500, False, 20)]
    assert PartitionReplicaSize.objects.get(broker_id=1).sampled_at == to_datetime(T0 + 20_000)
    # the topic list's totals: both replicas' sizes, messages from the leader's (broker 1) offsets only
    assert TopicTotals.objects.values_list("topic", "size_bytes", "messages").get() == ("t", 1200 + 1500, 30)
    ingest(two.round(T0 + 20_000, {}, {"u": (0, 7)}))  # a topic whose partition has no leader reported
    assert TopicTotals.objects.values_list("topic", "size_bytes", "messages").get(topic="u") == ("u", 7, None)


def test_history_seen_only_from_the_middle_is_a_baseline_not_a_spike():
    broker = BrokerStream(1)
    broker.round(T0 + 10_000, {"bytes_in": 10**9}, {"t": (10**9, 1)})  # published before we were installed
    records = broker.round(T0 + 20_000, {"bytes_in": 10**9 + 42}, {"t": (10**9 + 42, 1)})
    ingest(records)
    later = broker.round(T0 + 30_000, {"bytes_in": 10**9 + 50}, {"t": (10**9 + 50, 1)})
    ingest(later)
    assert total(BrokerMetricPoint, 3600, broker_id=1) == 8
    assert total(TopicMetricPoint, 3600, topic="t") == 8


def lag_record(offset, ts, group, partition, lag, lag_s, status):
    value = {"ts": ts, "cluster": "c", "group": group, "topic": "t", "partition": partition,
             "committed_offset": 1, "end_offset": 1 + lag, "lag": lag, "lag_seconds": lag_s, "status": "OK",
             "group_status": status, "threshold_breached": False}
    return SampleRecord(LAG_TOPIC, 0, offset, json.dumps(value).encode())


def test_lag_per_group_is_the_largest_total_over_partitions_in_the_bucket():
    ingest([lag_record(0, T0 + 1_000, "g", 0, 10, 1.5, "OK"), lag_record(1, T0 + 1_000, "g", 1, 5, 0.5, "OK")])
    ingest([lag_record(2, T0 + 31_000, "g", 0, 3, 0.2, "WARN"), lag_record(3, T0 + 31_000, "g", 1, 4, 0.1, "WARN")])
    point = LagMetricPoint.objects.get(resolution=60, group="g")
    assert (point.lag, point.lag_seconds, point.status) == (15, 1.5, "WARN")


def test_prune_keeps_each_resolution_for_its_retention():
    broker = BrokerStream(1)
    ingest(broker.round(T0 + 10_000, {"bytes_in": 10}, {}) + broker.round(T0 + 20_000, {"bytes_in": 30}, {}))
    now = datetime.fromtimestamp((T0 + 2 * 86_400_000) / 1000, UTC)
    prune_points(now)
    assert set(BrokerMetricPoint.objects.values_list("resolution", flat=True)) == {60, 3600}


def test_the_prune_task_is_in_the_beat_schedule():
    from django_celery_beat.models import PeriodicTask

    from controlplane.metrics.schedule import TASK, TASK_NAME
    from controlplane.metrics.tasks import prune_metric_rollups

    task = PeriodicTask.objects.get(name=TASK_NAME)
    assert (task.task, task.enabled, task.interval.every, task.interval.period) == (TASK, True, 600, "seconds")
    assert prune_metric_rollups.name == TASK
