"""Both report jobs end to end against a real broker: generated lag samples in the contract's format, a
snapshot measured from the broker's own log dir, outputs read back without Spark (spark_jobs.results)."""

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from spark_jobs import lag_report, retention_report
from spark_jobs.results import ReportLayout, list_runs, read_table
from tests.support.broker import REPO_ROOT, standalone_broker
from tests.support.lag_samples import LAG_SAMPLES_TOPIC, lag_sample, produce_samples
from tests.support.polling import wait_until
from tests.support.spark_cluster import spark_standalone

pytestmark = pytest.mark.timeout(600)

MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000
T10 = int(datetime(2026, 5, 4, 10, tzinfo=UTC).timestamp() * 1000)
NOW = int(time.time() * 1000) // MINUTE * MINUTE


def create_topics(admin, *topics):
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config) for name, partitions, config in topics])
    for future in futures.values():
        future.result(30)
    wait_until(lambda: all(name in admin.list_topics(timeout=5).topics for name, _, _ in topics), message="topics")


def lagging_30_minutes():
    """billing on orders-0: sampled every minute 09:50-12:09; WARN 10:30-10:40, ERR 10:40-11:00, threshold
    breached meanwhile. search on clicks-0/1: always OK."""
    samples = []
    for minute in range(-10, 130):
        ts = T10 + minute * MINUTE
        status = "WARN" if 30 <= minute < 40 else "ERR" if 40 <= minute < 60 else "OK"
        behind = status != "OK"
        samples.append(lag_sample(ts, "billing", "orders", 0, lag=100 * (minute - 29) if behind else 0,
                                  lag_seconds=30.0 * (minute - 29) if behind else 0.0, status=status, breached=behind))
        samples += [lag_sample(ts, "search", "clicks", p, lag=3, lag_seconds=1.5) for p in (0, 1)]
    return samples


def laggard_last_6_hours():
    """laggard on clicks-0 (1 day retention): time lag from 60000 s, +3600 s per hour, sampled every 10 min."""
    return [lag_sample(NOW - 6 * HOUR + i * 10 * MINUTE, "laggard", "clicks", 0, lag=1000 + i,
                       lag_seconds=60_000 + 600.0 * i, status="WARN") for i in range(37)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker")) as running:
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        create_topics(admin, (LAG_SAMPLES_TOPIC, 3, {}), ("clicks", 1, {"retention.ms": str(DAY)}),
                      ("orders", 1, {}), ("users", 1, {"cleanup.policy": "compact"}))
        produce_samples(running.bootstrap, lagging_30_minutes() + laggard_last_6_hours())
        produce_retention_data(running)
        yield running


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def run_job(module: str, arguments: list[str], master: str) -> list[dict]:
    """Run `python -m spark_jobs.<module>` as the control plane will; its events, once it succeeded."""
    env = {**os.environ, "STROM_SPARK_MASTER": master}
    command = [sys.executable, "-m", f"spark_jobs.{module}", *arguments, "--conf", "spark.sql.shuffle.partitions=2"]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=480)
    assert done.returncode == 0, done.stderr[-3000:]
    return events(done.stdout)


def lag_arguments(broker, output: Path) -> list[str]:
    return ["--bootstrap-servers", broker.bootstrap, "--end", "2026-05-04T12:00:00Z", "--period-hours", "2",
            "--output", str(output)]


def test_lag_report(spark, broker, tmp_path, capsys):
    """The job's whole run in this process (the subprocess form runs in the standalone-cluster test)."""
    status = lag_report.main([*lag_arguments(broker, tmp_path / "reports"), "--progress-file",
                              str(tmp_path / "progress.jsonl")])
    assert status == 0
    seen = events(capsys.readouterr().out)
    assert seen == events((tmp_path / "progress.jsonl").read_text())
    assert seen[0]["event"] == "started" and seen[0]["period_start"] == "2026-05-04T10:00:00+00:00"
    fractions = [event["fraction"] for event in seen if event["event"] == "progress"]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) >= 6
    assert any(event["tasks_total"] > 0 for event in seen if event["event"] == "progress")
    finished = seen[-1]
    assert finished["event"] == "finished" and finished["run_id"] == "20260504T120000Z"
    assert finished["rows"] == {"partitions": 3, "groups": 2, "breaches": 1, "worst_partitions": 3}

    layout = ReportLayout(tmp_path / "reports", "lag")
    partitions = {(row["group"], row["partition"]): row for row in read_table(layout, "partitions").to_pylist()}
    billing = partitions["billing", 0]
    assert (billing["seconds_warn"], billing["seconds_err"], billing["seconds_observed"]) == (600, 1200, 7200)
    assert billing["samples"] == 120 and billing["breach_seconds"] == 1800
    assert partitions["search", 1]["seconds_ok"] == 7200 and partitions["search", 1]["lag_p95"] == 3
    groups = {row["group"]: row for row in read_table(layout, "groups").to_pylist()}
    assert groups["billing"]["worst_status"] == "ERR" and groups["search"]["worst_status"] == "OK"
    [breach] = read_table(layout, "breaches").to_pylist()
    assert breach["duration_seconds"] == 1800 and breach["started"] == datetime(2026, 5, 4, 10, 30, tzinfo=UTC)
    assert read_table(layout, "worst_partitions").sort_by("rank").column("group").to_pylist()[0] == "billing"
    csv_lines = layout.csv_path("breaches", datetime(2026, 5, 4).date(), "20260504T120000Z").read_text().splitlines()
    assert len(csv_lines) == 2 and '"duration_seconds"' in csv_lines[0]
    [run] = list_runs(layout)
    assert run["tables"] == finished["rows"] and run["period_end"] == "2026-05-04T12:00:00+00:00"


def test_a_failed_run_says_why_in_one_line(spark, broker, tmp_path, capsys):
    status = lag_report.main(["--bootstrap-servers", broker.bootstrap, "--topic", "missing-samples",
                              "--output", str(tmp_path)])
    out, err = capsys.readouterr()
    assert status == 1
    assert err.strip() == "error: unknown topic(s): missing-samples"
    assert events(out)[-1] == {"event": "failed", "report": "lag", "run_id": events(out)[0]["run_id"],
                               "error": "unknown topic(s): missing-samples"}
    assert list_runs(ReportLayout(tmp_path, "lag")) == []


def log_size(partition_dir: Path) -> tuple[int, int]:
    logs = list(partition_dir.glob("*.log"))
    return sum(path.stat().st_size for path in logs), len(logs)


def snapshot_of(broker, taken_at_ms: int) -> dict:
    """What the control plane will pass: effective configs, and sizes as DescribeLogDirs reports them (here
    measured on the broker's log dir)."""
    configs = {
        "clicks": {"cleanup.policy": "delete", "retention.ms": str(DAY), "retention.bytes": "-1",
                   "segment.ms": str(7 * DAY), "segment.bytes": str(2**30)},
        "orders": {"cleanup.policy": "delete", "retention.ms": str(7 * DAY), "retention.bytes": "-1"},
        "users": {"cleanup.policy": "compact", "retention.ms": str(7 * DAY), "retention.bytes": "-1",
                  "min.cleanable.dirty.ratio": "0.5"},
    }
    replicas = []
    for topic in configs:
        size, segments = log_size(broker.log_dir / f"{topic}-0")
        replicas.append({"topic": topic, "partition": 0, "broker": 1, "log_dir": str(broker.log_dir),
                         "size_bytes": size, "segments": segments, "leader": True})
    disk = shutil.disk_usage(broker.log_dir)
    return {"taken_at_ms": taken_at_ms, "topics": [{"topic": t, "configs": c} for t, c in configs.items()],
            "replicas": replicas,
            "log_dirs": [{"broker": 1, "log_dir": str(broker.log_dir), "total_bytes": disk.total,
                          "usable_bytes": disk.free}]}


def produce_retention_data(broker) -> None:
    """clicks: 3 days of data under retention.ms = 1 day (all in the active segment, which the broker never
    deletes); orders: 2 days under 7; users (compacted): a key written three times and a tombstone."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for hour in range(72, -1, -1):
        producer.produce("clicks", value=b"c" * 100, timestamp=NOW - hour * HOUR)
    for hour in range(48, -1, -1):
        producer.produce("orders", value=b"o" * 100, timestamp=NOW - hour * HOUR)
    for key, value in ((b"a", b"1111"), (b"b", b"22"), (b"a", b"333"), (b"c", None), (b"a", b"4")):
        producer.produce("users", key=key, value=value, timestamp=NOW - HOUR)
    assert producer.flush(30) == 0


def retention_arguments(broker, work: Path) -> list[str]:
    """A snapshot of the broker now and a size history in which clicks-0 grew 1000 bytes a day."""
    snapshot = snapshot_of(broker, NOW)
    (work / "snapshot.json").write_text(json.dumps(snapshot))
    clicks_size = snapshot["replicas"][0]["size_bytes"]
    history = [{"ts": NOW - days * DAY, "broker": 1, "log_dir": str(broker.log_dir), "topic": "clicks",
                "partition": 0, "size_bytes": clicks_size - days * 1000} for days in (2, 1)]
    (work / "history.jsonl").write_text("".join(json.dumps(row) + "\n" for row in history))
    return ["--snapshot", str(work / "snapshot.json"), "--size-history", str(work / "history.jsonl"),
            "--bootstrap-servers", broker.bootstrap, "--edge-records", "5", "--output", str(work / "reports")]


def test_retention_report(spark, broker, tmp_path):
    assert retention_report.main(retention_arguments(broker, tmp_path)) == 0
    layout = ReportLayout(tmp_path / "reports", "retention")
    replicas = {row["topic"]: row for row in read_table(layout, "replicas").to_pylist()}
    clicks = replicas["clicks"]
    assert clicks["kept_longer_than_retention"] and clicks["kept_hours"] == 72 and clicks["retention_hours"] == 24
    assert clicks["likely_cause"] == "only the active segment, which retention never deletes"
    assert clicks["growth_bytes_per_day"] == pytest.approx(1000)
    assert not replicas["orders"]["kept_longer_than_retention"] and replicas["orders"]["kept_hours"] == 48
    topics = {row["topic"]: row for row in read_table(layout, "topics").to_pylist()}
    assert topics["users"]["tombstones"] == 1 and topics["users"]["superseded_ratio"] == pytest.approx(9 / 15)
    assert topics["clicks"]["slowest_group"] == "laggard" and not topics["clicks"]["retention_shorter_than_lag"]
    [log_dir] = read_table(layout, "log_dirs").to_pylist()
    snapshot = json.loads((tmp_path / "snapshot.json").read_text())
    assert log_dir["days_until_full"] == pytest.approx(snapshot["log_dirs"][0]["usable_bytes"] / 1000)
    [at_risk] = read_table(layout, "consumers_at_risk").to_pylist()
    last = laggard_last_6_hours()[-1]["lag_seconds"]
    assert (at_risk["group"], at_risk["topic"]) == ("laggard", "clicks")
    assert at_risk["hours_until_data_loss"] == pytest.approx((86_400 - last) / 3600)


def test_a_bad_snapshot_is_refused(tmp_path, capsys):
    (tmp_path / "snapshot.json").write_text(json.dumps({"taken_at_ms": NOW, "topics": [
        {"topic": "clicks", "configs": {"cleanup.policy": "delete"}}], "replicas": [], "log_dirs": []}))
    status = retention_report.main(["--snapshot", str(tmp_path / "snapshot.json"), "--bootstrap-servers", "x:1"])
    out, err = capsys.readouterr()
    assert status == 1 and "topic 'clicks' configs: 'retention.ms' is required" in err
    assert events(out)[-1]["event"] == "failed"


@pytest.mark.slow
def test_both_reports_on_a_spark_standalone_cluster(broker, tmp_path):
    """STROM_SPARK_MASTER=spark://…: the same jobs run their tasks (the strom source's reads included) on a
    real master and worker; the executors import the spark_jobs zip the driver ships."""
    with spark_standalone(tmp_path / "spark") as cluster:
        lag = run_job("lag_report", lag_arguments(broker, tmp_path / "reports"), cluster.master_url)
        assert [event["event"] for event in lag][::len(lag) - 1] == ["started", "finished"]
        (tmp_path / "retention").mkdir()
        retention = run_job("retention_report", retention_arguments(broker, tmp_path / "retention"),
                            cluster.master_url)
        apps = cluster.state()["completedapps"]
    assert lag[0]["master"] == retention[0]["master"] == cluster.master_url
    assert sorted(app["name"] for app in apps) == ["strom-lag-report", "strom-retention-report"]
    assert lag[-1]["rows"]["breaches"] == 1
    partitions = read_table(ReportLayout(tmp_path / "reports", "lag"), "partitions").to_pylist()
    billing = next(row for row in partitions if row["group"] == "billing")
    assert billing["seconds_warn"] + billing["seconds_err"] == 1800
    replicas = read_table(ReportLayout(tmp_path / "retention" / "reports", "retention"), "replicas").to_pylist()
    assert next(row for row in replicas if row["topic"] == "clicks")["kept_longer_than_retention"]
