"""`python -m spark_jobs.lag_report`: which consumer groups were unhealthy in the period, and for how long.

Input: the lag samples topic (`__strom_lag_samples`, format in CONTRACTS.md), read through the `strom`
source by record timestamp (`ts`) from `period start - max sample gap` to the period end; or sample files
with the same fields (`--samples`: Parquet, or JSON Lines when the name ends in .json/.jsonl), e.g. an
archive. Tables (see `spark_jobs.transforms.lag`): `partitions`, `groups`, `breaches`,
`worst_partitions`; layout in `spark_jobs.results`, progress events in `spark_jobs.progress`.

    python -m spark_jobs.lag_report --bootstrap-servers 127.0.0.1:9092 --period-hours 168
"""

import argparse
import contextlib
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from spark_jobs.jobs import ReportRun, add_common_arguments, parse_time, run_report
from spark_jobs.transforms.lag import (
    PARTITION_KEYS,
    SAMPLE_SCHEMA,
    Period,
    breach_episodes,
    group_report,
    held_intervals,
    parse_samples,
    partition_report,
    worst_partitions,
)

LAG_SAMPLES_TOPIC = "__strom_lag_samples"
DEFAULT_MAX_GAP_S = 300.0
STEPS = ["samples", "partitions", "groups", "breaches", "worst_partitions"]
REPORTED_FIELDS = ("ts", *PARTITION_KEYS, "lag", "lag_seconds", "status", "group_status", "threshold_breached")
"""The sample fields the report uses (the offsets are not cached, shuffled or sorted)."""
ADAPTIVE = "spark.sql.adaptive.enabled"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.lag_report", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", default=os.environ.get("STROM_BOOTSTRAP_SERVERS"),
                        help="brokers to read the samples topic from (default: $STROM_BOOTSTRAP_SERVERS)")
    parser.add_argument("--topic", default=LAG_SAMPLES_TOPIC, help=f"samples topic (default {LAG_SAMPLES_TOPIC})")
    parser.add_argument("--samples", type=Path, help="read samples from these files instead of the topic")
    parser.add_argument("--end", type=parse_time, help="period end, ISO 8601 (default: now, to the minute)")
    parser.add_argument("--period-hours", type=_positive, default=1.0, help="period length (default 1)")
    parser.add_argument("--max-sample-gap-seconds", type=_positive, default=DEFAULT_MAX_GAP_S,
                        help="longest time one sample stands for; longer silences are unobserved (default 300)")
    parser.add_argument("--worst", type=int, default=20, help="rows of worst_partitions (default 20)")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    if args.samples is None and not args.bootstrap_servers:
        parser.error("give --bootstrap-servers (or STROM_BOOTSTRAP_SERVERS) or --samples")
    return args


def report_period(args: argparse.Namespace) -> Period:
    end = args.end or datetime.now(UTC).replace(second=0, microsecond=0)
    start = end - timedelta(hours=args.period_hours)
    return Period(start_ms=int(start.timestamp() * 1000), end_ms=int(end.timestamp() * 1000),
                  max_gap_ms=int(args.max_sample_gap_seconds * 1000))


def load_samples(spark, period: Period, files: Path | None = None, bootstrap_servers: str | None = None,
                 topic: str = LAG_SAMPLES_TOPIC):
    """The samples that can matter for the period (from `start - max gap` to the end), from `files` or else
    from `topic`."""
    from pyspark.sql import functions as F

    if files is not None:
        reader = spark.read.schema(SAMPLE_SCHEMA)
        frame = reader.json(str(files)) if files.suffix in (".json", ".jsonl") else reader.parquet(str(files))
        return frame.where((F.col("ts") >= period.start_ms - period.max_gap_ms) & (F.col("ts") < period.end_ms))
    records = (spark.read.format("strom")
               .option("kafka.bootstrap.servers", bootstrap_servers)
               .option("subscribe", topic)
               .option("startingTimestamp", str(period.start_ms - period.max_gap_ms))
               .option("startingOffsetsByTimestampStrategy", "latest")  # no sample that late: nothing to read
               .option("endingTimestamp", str(period.end_ms))
               .load())
    return parse_samples(records)


def build(run: ReportRun, args: argparse.Namespace, period: Period) -> None:
    with adaptive_execution_off(run.spark):
        _build(run, args, period)


@contextlib.contextmanager
def adaptive_execution_off(spark):
    """Spark's adaptive query execution off in the block (restored after). Under it, a cached DataFrame's
    partitioning is unknown to the queries reading it, so each aggregation of the cached held intervals would
    shuffle and sort all the samples again; without it they are shuffled and sorted once, by key."""
    previous = spark.conf.get(ADAPTIVE, None)
    spark.conf.set(ADAPTIVE, "false")
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(ADAPTIVE)
        else:
            spark.conf.set(ADAPTIVE, previous)


def _build(run: ReportRun, args: argparse.Namespace, period: Period) -> None:
    from pyspark import StorageLevel

    samples = load_samples(run.spark, period, args.samples, args.bootstrap_servers, args.topic)
    samples = samples.select(*REPORTED_FIELDS).persist(StorageLevel.MEMORY_AND_DISK)
    run.step("samples", samples.count)
    held = held_intervals(samples, period, PARTITION_KEYS).persist(StorageLevel.MEMORY_AND_DISK)
    episodes = breach_episodes(held, period).persist(StorageLevel.MEMORY_AND_DISK)
    partitions = partition_report(held, period, episodes).persist(StorageLevel.MEMORY_AND_DISK)
    run.write("partitions", partitions)
    run.write("groups", group_report(samples, partitions, period))
    run.write("breaches", episodes)
    run.write("worst_partitions", worst_partitions(partitions, args.worst))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    period = report_period(args)
    bounds = (datetime.fromtimestamp(period.start_ms / 1000, UTC), datetime.fromtimestamp(period.end_ms / 1000, UTC))
    return run_report("lag", args, STEPS, bounds[1], bounds, lambda run: build(run, args, period))


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return value


if __name__ == "__main__":
    sys.exit(main())
