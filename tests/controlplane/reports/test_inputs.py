"""The retention job's inputs, made from the metadata store and the metrics rollups: the snapshot (checked by the
job's own loader, `spark_jobs.snapshot`), the size history from earlier snapshots, and the job's options."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from controlplane.metrics.models import LogDirMetricPoint, PartitionReplicaSize
from controlplane.reports import inputs
from controlplane.reports.inputs import ParameterError, check_parameters
from controlplane.reports.models import Report, ReportRun
from spark_jobs.snapshot import load_snapshot

NOW = datetime(2026, 11, 24, 5, 0, tzinfo=UTC)


def replica(broker: int, topic: str, partition: int, size: int, leader: bool = False) -> PartitionReplicaSize:
    return PartitionReplicaSize.objects.create(
        broker_id=broker, topic=topic, partition=partition, log_dir=f"/data/{broker}", size_bytes=size,
        log_start_offset=0, log_end_offset=size // 100, leader=leader, sampled_at=NOW - timedelta(seconds=5))


@pytest.fixture
def rollups(cluster):
    """Sizes of orders-0 on its replicas 1, 2, 3 and payments-0 on 1; stale rows: orders-0 on broker 4 (moved away)
    and a deleted topic; log dir readings of broker 1 (two, the later wins) and an hour-old one of broker 2."""
    for broker in (1, 2, 3):
        replica(broker, "orders", 0, 1000 * broker, leader=broker == 1)
    replica(1, "payments", 0, 500, leader=True)
    replica(4, "orders", 0, 999)
    replica(1, "deleted-topic", 0, 777)
    for start, free in ((NOW - timedelta(seconds=20), 6000), (NOW - timedelta(seconds=10), 5000)):
        LogDirMetricPoint.objects.create(resolution=10, start=start, broker_id=1, path="/data/1", size_bytes=1,
                                         total_bytes=10_000, free_bytes=free)
    LogDirMetricPoint.objects.create(resolution=10, start=NOW - timedelta(hours=2), broker_id=2, path="/data/2",
                                     size_bytes=1, total_bytes=10_000, free_bytes=1)


def test_the_snapshot_has_effective_configs_placed_replicas_and_recent_log_dirs(rollups, tmp_path):
    snapshot = inputs.retention_snapshot(NOW)
    loaded = load_snapshot(inputs.write_snapshot(tmp_path / "s.json", snapshot))

    assert loaded.taken_at_ms == int(NOW.timestamp() * 1000)
    orders = next(t for t in loaded.topics if t["topic"] == "orders")
    assert (orders["cleanup_policy"], orders["retention_ms"], orders["retention_bytes"]) == ("delete", 3_600_000, -1)
    assert (orders["segment_bytes"], orders["min_cleanable_dirty_ratio"]) == (1_073_741_824, 0.5)
    assert [(r["topic"], r["partition"], r["broker"], r["size_bytes"], r["leader"]) for r in loaded.replicas] == [
        ("orders", 0, 1, 1000, True), ("orders", 0, 2, 2000, False), ("orders", 0, 3, 3000, False),
        ("payments", 0, 1, 500, True)]
    assert loaded.log_dirs == [{"broker": 1, "log_dir": "/data/1", "total_bytes": 10_000, "usable_bytes": 5000}]


def test_earlier_snapshots_within_the_window_are_the_size_history(tmp_path):
    def snapshot(name: str, at: datetime, size: int):
        return inputs.write_snapshot(tmp_path / f"{name}.json", {
            "taken_at_ms": int(at.timestamp() * 1000), "topics": [], "log_dirs": [],
            "replicas": [{"topic": "t", "partition": 0, "broker": 1, "log_dir": "/d", "size_bytes": size}]})

    snapshot("too-old", NOW - timedelta(days=8), 1)
    snapshot("yesterday", NOW - timedelta(days=1), 100)
    snapshot("later", NOW + timedelta(hours=1), 999)  # taken after the current one: not history
    current = snapshot("now", NOW, 300)

    history = inputs.write_size_history(tmp_path, current, timedelta(days=7))

    rows = [json.loads(line) for line in history.read_text().splitlines()]
    assert rows == [{"ts": int((NOW - timedelta(days=1)).timestamp() * 1000), "broker": 1, "log_dir": "/d",
                     "topic": "t", "partition": 0, "size_bytes": 100}]
    assert inputs.write_size_history(tmp_path, snapshot("first", NOW - timedelta(days=30), 1), timedelta(days=7)) \
        is None


def test_the_retention_jobs_arguments_name_its_snapshot(rollups, tmp_path, settings):
    settings.STROM_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
    run = ReportRun.objects.create(report=Report.RETENTION, run_id="retention-1",
                                   parameters=check_parameters(Report.RETENTION, {"horizon_hours": 48}))
    arguments = inputs.job_arguments(run, tmp_path)
    assert arguments == ["--bootstrap-servers", "127.0.0.1:9092", "--horizon-hours", "48", "--history-days", "7",
                         "--lag-hours", "6", "--snapshot", str(tmp_path / "inputs/retention/retention-1.json")]
    assert len(load_snapshot(tmp_path / "inputs/retention/retention-1.json").replicas) == 4


@pytest.mark.parametrize(("report", "given", "expected"), [
    (Report.LAG, {}, {"period_hours": 1.0}),
    (Report.LAG, {"period_hours": 168}, {"period_hours": 168.0}),
    (Report.RETENTION, {"lag_hours": 0.5}, {"horizon_hours": 24.0, "history_days": 7.0, "lag_hours": 0.5}),
    (Report.LAG, {"period_hours": 0}, "period_hours must be a number of at least 0.01, not 0"),
    (Report.LAG, {"period_hours": True}, "period_hours must be a number of at least 0.01, not True"),
    (Report.RETENTION, {"period_hours": 1, "x": 2},
     "unknown parameter(s) period_hours, x for the retention report; it takes horizon_hours, history_days, lag_hours"),
])
def test_parameters(report, given, expected):
    if isinstance(expected, str):
        with pytest.raises(ParameterError) as error:
            check_parameters(report, given)
        assert str(error.value) == expected
    else:
        assert check_parameters(report, given) == expected
