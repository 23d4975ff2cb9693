"""`python -m spark_jobs.retention_report`: which topics hold more (or less) data than their retention says,
which disks fill first, and which consumer groups are about to lose data.

Inputs:
- `--snapshot FILE` (required): topics with effective configs, replicas with sizes, log dirs with capacity,
  as of `taken_at_ms` (format in `spark_jobs.snapshot`);
- `--size-history PATH` (optional): earlier replica sizes for growth, Parquet or JSON Lines (.json/.jsonl)
  rows `{ts, broker, log_dir, topic, partition, size_bytes}` (ts in ms); the snapshot adds the latest point;
- the cluster at `--bootstrap-servers`, read through the `strom` source: the first and last
  `--edge-records` records of every partition of a `delete` topic (record times), whole `compact` topics
  (tombstones, superseded and dirty bytes);
- lag samples of the last `--lag-hours` (the `__strom_lag_samples` topic, or `--lag-samples` files) for the
  slowest consumers and consumers at risk; without a samples topic those tables are empty (a `warning`
  event says so).
Tables (see `spark_jobs.transforms.retention`): `replicas`, `topics`, `log_dirs`, `consumers_at_risk`.

    python -m spark_jobs.retention_report --snapshot var/snapshot.json --bootstrap-servers 127.0.0.1:9092
"""

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from spark_jobs.jobs import ReportRun, add_common_arguments, fail_before_start, run_report
from spark_jobs.lag_report import DEFAULT_MAX_GAP_S, LAG_SAMPLES_TOPIC, load_samples
from spark_jobs.snapshot import Snapshot, SnapshotError, load_snapshot
from spark_jobs.source.offsets import OffsetLookup
from spark_jobs.source.schema import kafka_schema
from spark_jobs.transforms.lag import PARTITION_KEYS, Period, held_intervals, partition_report
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

STEPS = ["records", "lag", "replicas", "topics", "log_dirs", "consumers_at_risk"]
LOOKUP_TIMEOUT_S = 30.0
MS_PER_HOUR = 3_600_000


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.retention_report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, required=True, help="cluster snapshot (JSON, see README)")
    parser.add_argument("--size-history", type=Path, help="earlier replica sizes (Parquet or JSON Lines)")
    parser.add_argument("--history-days", type=float, default=7.0, help="growth window in days (default 7)")
    parser.add_argument("--bootstrap-servers", default=os.environ.get("STROM_BOOTSTRAP_SERVERS"),
                        help="brokers to read records and lag samples from (default: $STROM_BOOTSTRAP_SERVERS)")
    parser.add_argument("--edge-records", type=int, default=100,
                        help="records read at each end of a delete-policy partition (default 100)")
    parser.add_argument("--lag-topic", default=LAG_SAMPLES_TOPIC, help=f"lag samples topic ({LAG_SAMPLES_TOPIC})")
    parser.add_argument("--lag-samples", type=Path, help="read lag samples from these files instead of the topic")
    parser.add_argument("--lag-hours", type=float, default=6.0, help="lag trend window in hours (default 6)")
    parser.add_argument("--horizon-hours", type=float, default=24.0,
                        help="flag consumers reaching retention within this many hours (default 24)")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    if not args.bootstrap_servers:
        parser.error("give --bootstrap-servers (or STROM_BOOTSTRAP_SERVERS): record times come from the cluster")
    if args.edge_records < 1:
        parser.error("--edge-records must be at least 1")
    return args


def edge_ranges(snapshot: Snapshot, lookup: OffsetLookup, edge_records: int) -> list[dict]:
    """Offset ranges to read, as lists of `{(topic, partition): (start, end)}` (one `strom` read each):
    the head and the tail of delete-policy partitions (one range when they meet), compacted ones whole."""
    compacted = {topic["topic"] for topic in snapshot.topics if "compact" in topic["cleanup_policy"]}
    partitions = sorted({(replica["topic"], replica["partition"]) for replica in snapshot.replicas})
    heads, tails = {}, {}
    for tp, (low, high) in lookup.watermarks(partitions).items():
        if high <= low:
            continue
        if tp[0] in compacted or high - low <= 2 * edge_records:
            heads[tp] = (low, high)
        else:
            heads[tp] = (low, low + edge_records)
            tails[tp] = (high - edge_records, high)
    return [ranges for ranges in (heads, tails) if ranges]


def read_ranges(spark, bootstrap_servers: str, ranges: dict):
    """The records of exactly these ranges, through the `strom` source (assign + JSON offsets)."""
    assign, starting, ending = {}, {}, {}
    for (topic, partition), (start, end) in sorted(ranges.items()):
        assign.setdefault(topic, []).append(partition)
        starting.setdefault(topic, {})[str(partition)] = start
        ending.setdefault(topic, {})[str(partition)] = end
    return (spark.read.format("strom").option("kafka.bootstrap.servers", bootstrap_servers)
            .option("assign", json.dumps(assign)).option("startingOffsets", json.dumps(starting))
            .option("endingOffsets", json.dumps(ending))
            .option("failOnDataLoss", "false")  # retention may move the log start meanwhile: read what is left
            .load())


def load_size_history(spark, args: argparse.Namespace, snapshot: Snapshot):
    from pyspark.sql import functions as F

    latest = spark.createDataFrame(
        [{**{key: replica[key] for key in ("broker", "log_dir", "topic", "partition", "size_bytes")},
          "ts": snapshot.taken_at_ms} for replica in snapshot.replicas], SIZE_HISTORY_SCHEMA)
    if args.size_history is None:
        return latest
    reader = spark.read.schema(SIZE_HISTORY_SCHEMA)
    path = str(args.size_history)
    earlier = reader.json(path) if args.size_history.suffix in (".json", ".jsonl") else reader.parquet(path)
    since = snapshot.taken_at_ms - int(args.history_days * 24 * MS_PER_HOUR)
    return earlier.where((F.col("ts") >= since) & (F.col("ts") < snapshot.taken_at_ms)).unionByName(latest)


def lag_statistics(run: ReportRun, args: argparse.Namespace, snapshot: Snapshot, lookup: OffsetLookup):
    """The lag report's partition rows over the last `--lag-hours`, or None without any lag samples."""
    if args.lag_samples is None and args.lag_topic not in lookup.topics():
        run.reporter.emit("warning", message=f"no lag samples topic {args.lag_topic!r}: consumers at risk and "
                                             "slowest consumers are not evaluated (is the lag monitor running?)")
        return None
    end = snapshot.taken_at_ms + 1  # samples up to and including the snapshot's time
    period = Period(start_ms=end - int(args.lag_hours * MS_PER_HOUR), end_ms=end,
                    max_gap_ms=int(DEFAULT_MAX_GAP_S * 1000))
    samples = load_samples(run.spark, period, args.lag_samples, args.bootstrap_servers, args.lag_topic)
    return partition_report(held_intervals(samples, period, PARTITION_KEYS), period)


def build(run: ReportRun, args: argparse.Namespace, snapshot: Snapshot) -> None:
    from pyspark import StorageLevel

    spark = run.spark
    lookup = OffsetLookup({"bootstrap.servers": args.bootstrap_servers}, LOOKUP_TIMEOUT_S)
    topics = spark.createDataFrame(snapshot.topics, TOPIC_SCHEMA)
    replicas = spark.createDataFrame(snapshot.replicas, REPLICA_SCHEMA)
    log_dirs = spark.createDataFrame(snapshot.log_dirs, LOG_DIR_SCHEMA)

    records = spark.createDataFrame([], kafka_schema(False))
    for ranges in edge_ranges(snapshot, lookup, args.edge_records):
        records = records.unionByName(read_ranges(spark, args.bootstrap_servers, ranges))
    records = records.persist(StorageLevel.MEMORY_AND_DISK)
    run.step("records", records.count)

    lag = lag_statistics(run, args, snapshot, lookup)
    if lag is None:
        lag = spark.createDataFrame([], "cluster string, group string, topic string, partition int, "
                                        "last_lag_seconds double, lag_seconds_trend_per_hour double")
    lag = lag.persist(StorageLevel.MEMORY_AND_DISK)
    run.step("lag", lag.count)

    replica_rows = replica_report(topics, replicas, record_times(records),
                                  growth(load_size_history(spark, args, snapshot)), snapshot.taken_at_ms)
    replica_rows = replica_rows.persist(StorageLevel.MEMORY_AND_DISK)
    run.write("replicas", replica_rows)
    compacted = compaction(records, topics, replicas)
    run.write("topics", topic_report(replica_rows, topics, compacted, slowest_consumers(lag)))
    run.write("log_dirs", log_dir_report(log_dirs, replica_rows))
    run.write("consumers_at_risk", consumers_at_risk(lag, topics, replica_rows, args.horizon_hours))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        snapshot = load_snapshot(args.snapshot)
    except SnapshotError as exc:
        return fail_before_start("retention", args, str(exc))
    as_of = datetime.fromtimestamp(snapshot.taken_at_ms / 1000, UTC)
    return run_report("retention", args, STEPS, as_of, None, lambda run: build(run, args, snapshot))


if __name__ == "__main__":
    sys.exit(main())
