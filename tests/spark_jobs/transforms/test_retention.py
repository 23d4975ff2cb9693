"""Retention report transforms on a generated snapshot, size history and records with known answers."""

from datetime import UTC, datetime

import pytest

from spark_jobs.source.schema import kafka_schema
from spark_jobs.transforms.retention import (
    LOG_DIR_SCHEMA,
    REPLICA_SCHEMA,
    SIZE_HISTORY_SCHEMA,
    TOPIC_SCHEMA,
    compaction,
    consumers_at_risk,
    growth,
    log_dir_report,
    record_times,
    replica_report,
    slowest_consumers,
    topic_report,
)

HOUR = 3_600_000
DAY = 24 * HOUR
NOW = int(datetime(2026, 5, 4, 6, tzinfo=UTC).timestamp() * 1000)
GB = 1_000_000_000


def at(ms):
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)  # the session's zone is UTC


def record(topic, partition, offset, ts, key=b"k", value=b"v"):
    return (key, value, topic, partition, offset, at(ts), 0)


@pytest.fixture(scope="module")
def inputs(spark):
    topics = spark.createDataFrame([
        ("clicks", "delete", DAY, -1, HOUR, GB, None),  # holds 3 days of data with retention.ms = 1 day
        ("orders", "delete", 7 * DAY, -1, 7 * DAY, GB, None),
        ("audit", "delete", 7 * DAY, 1000, 7 * DAY, 100, None),
        ("users", "compact", -1, -1, 7 * DAY, GB, 0.5),
    ], TOPIC_SCHEMA)
    replicas = spark.createDataFrame([
        ("clicks", 0, 1, "/d1", 3 * GB, 4, True, None),
        ("clicks", 0, 2, "/d2", 3 * GB, 4, False, None),
        ("orders", 0, 1, "/d1", 10_000, 1, True, None),
        ("audit", 0, 2, "/d2", 1500, 15, True, None),
        ("users", 0, 1, "/d1", 400, 2, True, 3),
    ], REPLICA_SCHEMA)
    log_dirs = spark.createDataFrame([(1, "/d1", 100 * GB, 10 * GB), (2, "/d2", 100 * GB, 50 * GB),
                                      (3, "/empty", 100 * GB, 100 * GB)], LOG_DIR_SCHEMA)
    history = spark.createDataFrame([
        (NOW - 2 * DAY, 1, "/d1", "clicks", 0, 1 * GB), (NOW - DAY, 1, "/d1", "clicks", 0, 2 * GB),
        (NOW, 1, "/d1", "clicks", 0, 3 * GB),
        (NOW - DAY, 2, "/d2", "audit", 0, 1000), (NOW, 2, "/d2", "audit", 0, 1500),
    ], SIZE_HISTORY_SCHEMA)
    records = spark.createDataFrame([
        record("clicks", 0, 0, NOW - 3 * DAY), record("clicks", 0, 1, NOW - 3 * DAY + HOUR),
        record("clicks", 0, 999, NOW - HOUR),
        record("orders", 0, 0, NOW - 2 * DAY), record("orders", 0, 5, NOW),
        record("users", 0, 0, NOW - DAY, b"a", b"1111"), record("users", 0, 1, NOW - DAY, b"b", b"22"),
        record("users", 0, 2, NOW - DAY, b"a", b"333"), record("users", 0, 3, NOW - DAY, b"c", None),
        record("users", 0, 4, NOW - DAY, b"a", b"4"),
    ], kafka_schema(False))
    lag = spark.createDataFrame([
        ("local", "near-retention", "clicks", 0, 80_000.0, 3600.0),  # 1 day retention: 1.78 h left
        ("local", "steady", "clicks", 0, 100.0, 0.0),
        ("local", "skipping", "orders", 0, 700_000.0, 0.0),  # beyond 7 days: already skipping data
        ("local", "bytes-bound", "audit", 0, 170_000.0, 100.0),  # 1000 B at 500 B/day: 2 days; 28 h left
    ], "cluster string, group string, topic string, partition int, last_lag_seconds double, "
       "lag_seconds_trend_per_hour double")
    replica_growth = growth(history)
    rows = replica_report(topics, replicas, record_times(records), replica_growth, NOW)
    return {"topics": topics, "replicas": rows, "log_dirs": log_dirs, "records": records, "lag": lag,
            "raw_replicas": replicas}


def test_a_topic_holding_3_days_with_1_day_retention_is_flagged(inputs):
    rows = {(r.topic, r.broker): r for r in inputs["replicas"].collect()}
    clicks = rows["clicks", 1]
    assert clicks.kept_longer_than_retention and clicks.kept_hours == 72 and clicks.retention_hours == 24
    assert clicks.likely_cause.startswith("retention not enforced")
    assert not rows["orders", 1].kept_longer_than_retention and rows["orders", 1].kept_hours == 48
    assert rows["audit", 2].over_retention_bytes and not rows["clicks", 1].over_retention_bytes
    assert clicks.growth_bytes_per_day == pytest.approx(GB) and rows["clicks", 2].growth_bytes_per_day is None


def test_topics_roll_up_replicas_compaction_and_the_slowest_consumer(inputs):
    topics = {r.topic: r for r in topic_report(inputs["replicas"], inputs["topics"],
                                               compaction(inputs["records"], inputs["topics"], inputs["raw_replicas"]),
                                               slowest_consumers(inputs["lag"])).collect()}
    clicks = topics["clicks"]
    assert (clicks.partitions, clicks.replicas, clicks.size_bytes) == (1, 2, 6 * GB)
    assert clicks.kept_longer_than_retention and clicks.slowest_group == "near-retention"
    assert not clicks.retention_shorter_than_lag
    assert topics["orders"].retention_shorter_than_lag and topics["orders"].slowest_group == "skipping"
    users = topics["users"]
    # key+value bytes: a1111=5, b22=3, a333=4, c=1 (tombstone), a4=2 -> 15; a@0 and a@2 superseded: 9;
    # dirty from offset 3: 1 + 2 = 3
    assert users.tombstones == 1 and users.superseded_ratio == pytest.approx(9 / 15)
    assert users.dirty_ratio == pytest.approx(3 / 15) and users.retention_hours is None


def test_log_dirs_fill_at_their_replicas_growth(inputs):
    dirs = {r.log_dir: r for r in log_dir_report(inputs["log_dirs"], inputs["replicas"]).collect()}
    assert dirs["/d1"].growth_bytes_per_day == pytest.approx(GB) and dirs["/d1"].days_until_full == pytest.approx(10)
    assert dirs["/d1"].replica_bytes == 3 * GB + 10_000 + 400 and dirs["/d1"].replicas == 3
    assert dirs["/d2"].growth_bytes_per_day == pytest.approx(500)
    assert dirs["/empty"].replicas == 0 and dirs["/empty"].days_until_full is None


def test_consumers_at_risk_within_the_horizon(inputs):
    def at_risk(hours):
        rows = consumers_at_risk(inputs["lag"], inputs["topics"], inputs["replicas"], hours).collect()
        return {r.group: r for r in rows}

    day = at_risk(24)
    assert set(day) == {"near-retention", "skipping"}
    assert day["near-retention"].hours_until_data_loss == pytest.approx((86_400 - 80_000) / 3600)
    assert day["skipping"].already_skipping and day["skipping"].hours_until_data_loss == 0
    two_days = at_risk(48)
    assert two_days["bytes-bound"].retention_limited_by == "retention.bytes"
    assert two_days["bytes-bound"].hours_until_data_loss == pytest.approx(28)
