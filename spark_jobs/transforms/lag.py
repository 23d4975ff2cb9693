"""Lag report: DataFrame → DataFrame transforms over lag samples (the `__strom_lag_samples` format of
CONTRACTS.md: one sample per group, topic and partition per evaluation round).

Time accounting: a sample's status (and its threshold breach) holds from its `ts` until the next sample
of the same partition, but never longer than `Period.max_gap_ms` (a longer silence is unobserved time)
and only within the period `[start_ms, end_ms)`. So a group sampled every minute that lags from 10:30
until a sample at 11:00 shows OK again spends exactly 30 minutes in WARN/ERR. Feed samples from
`start_ms - max_gap_ms` on, so the time before the period's first sample is accounted too.

Statistics (percentiles, maxima, trend) use the samples taken within the period. Percentiles are exact,
by nearest rank: the p-th percentile of n values is the ceil(p·n)-th smallest (a value of the input; what
`percentile_approx` gives for up to its accuracy's count of values).

Cost: every shuffle and sort of the samples goes by `KEY_HASH` first (see `held_intervals`), and each report
aggregates the samples once (statistics and time per status in one pass); the held intervals' partitioning is
reused by the breach episodes and the aggregations, so the samples are shuffled once per key set.
"""

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

# Burrow's statuses in its own order (worse = later); a group's worst status is the latest one it had
PARTITION_STATUSES = ("OK", "WARN", "ERR", "STOP", "STALL", "REWIND")
GROUP_STATUSES = ("NOTFOUND", *PARTITION_STATUSES)
PARTITION_KEYS = ("cluster", "group", "topic", "partition")
GROUP_KEYS = ("cluster", "group")
GROWING_MIN_R2 = 0.5  # a lag trend counts as growing when the fit explains at least half the variance
MS_PER_HOUR = 3_600_000
KEY_HASH = "key_hash"
"""A 64-bit hash of a row's keys (`held_intervals`): first in every partitioning and sort key, as a long sorts
fast where the keys' strings share long prefixes (one cluster name in every row). The keys always follow it, so
rows of different keys stay apart even where their hashes collide."""

SAMPLE_SCHEMA = StructType([
    StructField("ts", LongType()),
    StructField("cluster", StringType()),
    StructField("group", StringType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("committed_offset", LongType()),
    StructField("end_offset", LongType()),
    StructField("lag", LongType()),
    StructField("lag_seconds", DoubleType()),
    StructField("status", StringType()),
    StructField("group_status", StringType()),
    StructField("threshold_breached", BooleanType()),
])


@dataclass(frozen=True)
class Period:
    """The report's period `[start_ms, end_ms)` (ms since epoch) and the longest time one sample stands for."""

    start_ms: int
    end_ms: int
    max_gap_ms: int

    def __post_init__(self):
        assert self.start_ms < self.end_ms and self.max_gap_ms > 0, self


def parse_samples(records: DataFrame) -> DataFrame:
    """Rows of the lag samples topic (the `strom` source's schema) → samples; values that are not a sample
    (bad JSON, missing keys) are dropped."""
    parsed = records.select(F.from_json(F.col("value").cast("string"), SAMPLE_SCHEMA).alias("sample"))
    return parsed.select("sample.*").where(
        F.col("ts").isNotNull() & F.col("group").isNotNull() & F.col("topic").isNotNull()
        & F.col("partition").isNotNull() & F.col("status").isin(*PARTITION_STATUSES))


def held_intervals(samples: DataFrame, period: Period, keys: tuple[str, ...]) -> DataFrame:
    """Each sample of `samples` with `held_from`, `held_until` (ms) and `held_ms`: the time it stands for
    within the period (0 for one whose time ended before it, and for all but one of samples sharing keys
    and ts); and `KEY_HASH` of `keys`, by which (then the keys, then ts) it is partitioned and sorted."""
    window = Window.partitionBy(KEY_HASH, *keys).orderBy("ts")
    end = F.lit(period.end_ms)
    until = F.least(F.coalesce(F.lead("ts").over(window), end), F.col("ts") + period.max_gap_ms, end)
    return (samples
            .where((F.col("ts") >= period.start_ms - period.max_gap_ms) & (F.col("ts") < period.end_ms))
            .withColumn(KEY_HASH, F.xxhash64(*keys))
            .withColumn("held_until", until)
            .withColumn("held_from", F.greatest(F.col("ts"), F.lit(period.start_ms)))
            .withColumn("held_ms", F.greatest(F.col("held_until") - F.col("held_from"), F.lit(0))))


def breach_episodes(held: DataFrame, period: Period) -> DataFrame:
    """Runs of consecutive samples with `threshold_breached`, per partition: `started`, `ended`,
    `duration_seconds` (held time within the period), peak `lag_max`/`lag_seconds_max`, `ongoing` (still
    breached at the period's end)."""
    window = Window.partitionBy(KEY_HASH, *PARTITION_KEYS).orderBy("ts")  # as `held` is: no shuffle, no sort
    breached = F.coalesce(F.col("threshold_breached"), F.lit(False))
    starts = (breached & ~F.lag(breached, 1, False).over(window)).cast("int")
    episodes = (held.withColumn("breached", breached)
                .withColumn("episode", F.sum(starts).over(window))
                .where("breached")
                .groupBy(KEY_HASH, *PARTITION_KEYS, "episode")
                .agg(F.min("held_from").alias("started_ms"), F.max("held_until").alias("ended_ms"),
                     F.sum("held_ms").alias("held_ms"), F.max("lag").alias("lag_max"),
                     F.max("lag_seconds").alias("lag_seconds_max"))
                .where(F.col("held_ms") > 0))
    return episodes.select(
        *PARTITION_KEYS,
        F.timestamp_millis("started_ms").alias("started"),
        F.timestamp_millis("ended_ms").alias("ended"),
        (F.col("held_ms") / 1000).alias("duration_seconds"),
        "lag_max", "lag_seconds_max",
        (F.col("ended_ms") >= period.end_ms).alias("ongoing"))


def partition_report(held: DataFrame, period: Period, episodes: DataFrame | None = None) -> DataFrame:
    """From `held_intervals` of the samples (by partition), one row per group, topic and partition seen in
    the period: sample count, first/last sample time,
    lag p50/p95/max in records and seconds, the last sample's lag and status, seconds in each Burrow
    status (`seconds_ok` … `seconds_rewind`, plus `seconds_observed`), threshold breaches (count, total and
    longest seconds), and the trend: least-squares slope of lag in records per hour and of lag in seconds
    per hour, its r², and `lag_growing` (slope > 0 and r² >= 0.5). `episodes`: `breach_episodes(held)`, if
    the caller has them already."""
    taken = F.col("ts") >= period.start_ms  # statistics are over the samples taken within the period

    def within(column: str):
        return F.when(taken, F.col(column))  # null outside: ignored by every aggregate below

    hours = (F.col("ts") - period.start_ms) / MS_PER_HOUR
    stats = held.groupBy(KEY_HASH, *PARTITION_KEYS).agg(
        F.sum(F.when(taken, 1)).alias("samples"),  # null (then 0) without any: the schema of a join's column
        F.timestamp_millis(F.min(within("ts"))).alias("first_sample"),
        F.timestamp_millis(F.max(within("ts"))).alias("last_sample"),
        F.sort_array(F.collect_list(within("lag"))).alias("lags"),
        F.max(within("lag")).alias("lag_max"),
        F.sort_array(F.collect_list(within("lag_seconds"))).alias("lags_seconds"),
        F.max(within("lag_seconds")).alias("lag_seconds_max"),
        F.max_by(within("lag"), "ts").alias("last_lag"),  # the latest sample is within the period, if any is
        F.max_by(within("lag_seconds"), "ts").alias("last_lag_seconds"),
        F.max_by(within("status"), "ts").alias("last_status"),
        F.regr_slope(within("lag"), hours).alias("lag_trend_per_hour"),
        F.regr_slope(within("lag_seconds"), hours).alias("lag_seconds_trend_per_hour"),
        F.regr_r2(within("lag"), hours).alias("lag_trend_r2"),
        *_held_ms_by_status("status", PARTITION_STATUSES),
    )
    episodes = breach_episodes(held, period) if episodes is None else episodes
    breaches = episodes.groupBy(*PARTITION_KEYS).agg(
        F.count("*").alias("breaches"),
        F.sum("duration_seconds").alias("breach_seconds"),
        F.max("duration_seconds").alias("longest_breach_seconds"))
    report = (stats.join(breaches, list(PARTITION_KEYS), "left")
              .fillna(0, subset=["samples", "breaches", "breach_seconds", "longest_breach_seconds"]))
    growing = ((F.col("lag_trend_per_hour") > 0) & (F.col("lag_trend_r2") >= GROWING_MIN_R2))
    return report.select(
        *PARTITION_KEYS, "samples", "first_sample", "last_sample",
        _nearest_rank("lags", 0.5).alias("lag_p50"), _nearest_rank("lags", 0.95).alias("lag_p95"), "lag_max",
        _nearest_rank("lags_seconds", 0.5).alias("lag_seconds_p50"),
        _nearest_rank("lags_seconds", 0.95).alias("lag_seconds_p95"),
        "lag_seconds_max", "last_lag", "last_lag_seconds", "last_status",
        *_seconds_by_status(PARTITION_STATUSES), "breaches", "breach_seconds", "longest_breach_seconds",
        "lag_trend_per_hour", "lag_seconds_trend_per_hour", "lag_trend_r2",
        F.coalesce(growing, F.lit(False)).alias("lag_growing"))


def group_report(samples: DataFrame, partitions: DataFrame, period: Period) -> DataFrame:
    """One row per group: seconds in each Burrow group status (from `group_status`, one per evaluation
    round), its worst status in the period, and its partitions' totals from `partition_report`."""
    # every partition's sample of a round repeats its group status (should two differ, the worse one counts);
    # aggregated as the status's number, so the aggregation hashes (a string aggregate would sort every sample)
    statuses = F.array(*(F.lit(status) for status in GROUP_STATUSES))
    rounds = (samples.where(F.col("group_status").isin(*GROUP_STATUSES)).groupBy(*GROUP_KEYS, "ts")
              .agg(F.max(F.array_position(statuses, F.col("group_status"))).alias("status_number"))
              .select(*GROUP_KEYS, "ts",
                      F.element_at(statuses, F.col("status_number").cast("int")).alias("group_status")))
    durations = (held_intervals(rounds, period, GROUP_KEYS).groupBy(KEY_HASH, *GROUP_KEYS)
                 .agg(*_held_ms_by_status("group_status", GROUP_STATUSES)))
    worst = F.lit(None).cast("string")
    for status in GROUP_STATUSES:  # later statuses are worse: the last one with time wins
        worst = F.when(F.col(status) > 0, F.lit(status)).otherwise(worst)
    totals = partitions.groupBy(*GROUP_KEYS).agg(
        F.countDistinct("topic").alias("topics"),
        F.count("*").alias("partitions"),
        F.max("lag_seconds_max").alias("lag_seconds_max"),
        F.sum("last_lag").alias("last_total_lag"),
        F.sum("breaches").alias("breaches"),
        F.sum("breach_seconds").alias("breach_seconds"),
        F.sum(F.col("lag_growing").cast("int")).alias("partitions_growing"))
    return (durations.join(totals, list(GROUP_KEYS), "left")
            .select(*GROUP_KEYS, worst.alias("worst_status"), *_seconds_by_status(GROUP_STATUSES), "topics",
                    "partitions", "lag_seconds_max", "last_total_lag", "breaches", "breach_seconds",
                    "partitions_growing"))


def worst_partitions(partitions: DataFrame, limit: int) -> DataFrame:
    """The `limit` partitions with the most time in a status other than OK, then the highest p95 lag in
    seconds, then in records; `rank` starts at 1."""
    unhealthy = sum((F.col(_seconds_column(status)) for status in PARTITION_STATUSES if status != "OK"),
                    F.lit(0.0))
    order = [unhealthy.desc(), F.col("lag_seconds_p95").desc_nulls_last(), F.col("lag_p95").desc_nulls_last(),
             *(F.col(key) for key in PARTITION_KEYS)]
    ranked = partitions.withColumn("unhealthy_seconds", unhealthy).orderBy(*order).limit(limit)
    return ranked.withColumn("rank", F.row_number().over(Window.orderBy(*order)))


def _held_ms_by_status(column: str, statuses: tuple[str, ...]) -> list:
    """Aggregates: the held ms of the rows in each of `statuses` (named after the status; null without any)."""
    return [F.sum(F.when(F.col(column) == status, F.col("held_ms"))).alias(status) for status in statuses]


def _seconds_by_status(statuses: tuple[str, ...]) -> list:
    """From `_held_ms_by_status`'s columns: `seconds_<status>` of each, then `seconds_observed` (their sum)."""
    seconds = [F.coalesce(F.col(status), F.lit(0)) / 1000 for status in statuses]
    observed = sum(seconds, F.lit(0.0))
    return [*(value.alias(_seconds_column(status)) for value, status in zip(seconds, statuses, strict=True)),
            observed.alias("seconds_observed")]


def _nearest_rank(sorted_values: str, fraction: float):
    """The ceil(fraction·n)-th of n sorted values (null for none): `percentile_approx`'s rank, exactly."""
    values = F.col(sorted_values)
    return F.get(values, F.ceil(F.size(values) * fraction).cast("int") - 1)


def _seconds_column(status: str) -> str:
    return f"seconds_{status.lower()}"
