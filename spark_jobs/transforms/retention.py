"""Retention report: DataFrame → DataFrame transforms over a cluster snapshot (topics with their effective
configs, replicas with sizes, log dirs with capacity; see `spark_jobs.snapshot`), the replicas' size
history, records read through the `strom` source, and the lag report's per-partition statistics.

Rules (Kafka's, as an operator checks them):
- *Kept longer than retention.ms*: the oldest record read is older than `retention.ms` plus
  `tolerance_ms` (Kafka's retention check runs every 5 minutes). Kafka deletes whole segments once their
  newest record expires and never the active segment, so `likely_cause` names the usual reason.
- *Over retention.bytes*: a replica larger than `retention.bytes` plus one segment (Kafka deletes
  segments while the log minus one segment is still over the limit, and never the active one).
- *Retention shorter than the slowest consumer's lag*: a group's time lag exceeds `retention.ms`; it is
  already skipping data.
- *Growth*: least-squares slope of the replica sizes over time, in bytes per day; a log dir grows by the
  sum of its replicas' growth and is full in `usable_bytes / growth` days.
- *Consumers at risk*: a group's time lag grows (seconds per hour, from the lag samples) and reaches the
  partition's effective retention — `retention.ms`, or less when `retention.bytes` at the current growth
  removes data sooner — within `horizon_hours`.
- *Compaction*: tombstones (null values) and, over key + value bytes, the share of records a later record
  with the same key supersedes (what cleaning removes) and the dirty ratio (bytes after the cleaner's
  first dirty offset, when the snapshot gives it).
"""

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

MS_PER_HOUR = 3_600_000
MS_PER_DAY = 86_400_000
RETENTION_CHECK_MS = 300_000  # Kafka's log.retention.check.interval.ms default

TOPIC_SCHEMA = StructType([
    StructField("topic", StringType(), False),
    StructField("cleanup_policy", StringType(), False),  # "delete", "compact" or "compact,delete"
    StructField("retention_ms", LongType(), False),  # -1: unlimited
    StructField("retention_bytes", LongType(), False),  # -1: unlimited, per partition
    StructField("segment_ms", LongType()),
    StructField("segment_bytes", LongType()),
    StructField("min_cleanable_dirty_ratio", DoubleType()),
])
REPLICA_SCHEMA = StructType([
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("broker", IntegerType(), False),
    StructField("log_dir", StringType(), False),
    StructField("size_bytes", LongType(), False),
    StructField("segments", IntegerType()),
    StructField("leader", BooleanType()),
    StructField("first_dirty_offset", LongType()),  # the log cleaner's checkpoint, compacted topics
])
LOG_DIR_SCHEMA = StructType([
    StructField("broker", IntegerType(), False),
    StructField("log_dir", StringType(), False),
    StructField("total_bytes", LongType()),
    StructField("usable_bytes", LongType()),
])
SIZE_HISTORY_SCHEMA = StructType([
    StructField("ts", LongType(), False),  # ms since epoch
    StructField("broker", IntegerType(), False),
    StructField("log_dir", StringType(), False),
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("size_bytes", LongType(), False),
])
REPLICA_KEYS = ("topic", "partition", "broker", "log_dir")
LOG_DIR_KEYS = ("broker", "log_dir")


def record_times(records: DataFrame) -> DataFrame:
    """Oldest and newest record timestamp per topic-partition of the records read (`strom` schema)."""
    return records.groupBy("topic", "partition").agg(F.min("timestamp").alias("oldest_record"),
                                                      F.max("timestamp").alias("newest_record"))


def growth(size_history: DataFrame) -> DataFrame:
    """Bytes per day each replica grew by (least-squares slope; null with fewer than two distinct times)."""
    days = F.col("ts") / MS_PER_DAY
    return size_history.groupBy(*REPLICA_KEYS).agg(F.regr_slope("size_bytes", days).alias("growth_bytes_per_day"))


def compaction(records: DataFrame, topics: DataFrame, replicas: DataFrame) -> DataFrame:
    """Per partition of the compacted `topics` in `records` (read whole): records, tombstones,
    `superseded_ratio` and `dirty_ratio` over key + value bytes (dirty: from the leader replica's
    `first_dirty_offset` on)."""
    by_key = Window.partitionBy("topic", "partition", "key").orderBy(F.col("offset").desc())
    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    first_dirty = (replicas.where(F.coalesce("leader", F.lit(True)))
                   .groupBy("topic", "partition").agg(F.max("first_dirty_offset").alias("first_dirty_offset")))
    compacted = topics.where(F.col("cleanup_policy").contains("compact")).select("topic")
    marked = (records.join(compacted, "topic").withColumn("bytes", size)
              .withColumn("superseded", F.col("key").isNotNull() & (F.row_number().over(by_key) > 1))
              .join(first_dirty, ["topic", "partition"], "left"))
    dirty = F.when(F.col("offset") >= F.col("first_dirty_offset"), F.col("bytes")).otherwise(F.lit(0))
    totals = marked.groupBy("topic", "partition").agg(
        F.count("*").alias("records"),
        F.sum(F.col("value").isNull().cast("long")).alias("tombstones"),
        F.sum("bytes").alias("bytes"),
        F.sum(F.when(F.col("superseded"), F.col("bytes")).otherwise(F.lit(0))).alias("superseded_bytes"),
        F.sum(dirty).alias("dirty_bytes"),
        F.max("first_dirty_offset").alias("first_dirty_offset"))
    return totals.select(
        "topic", "partition", "records", "tombstones", "bytes", "superseded_bytes",
        _ratio("superseded_bytes", "bytes").alias("superseded_ratio"),
        F.when(F.col("first_dirty_offset").isNotNull(), _ratio("dirty_bytes", "bytes")).alias("dirty_ratio"))


def replica_report(topics: DataFrame, replicas: DataFrame, times: DataFrame, replica_growth: DataFrame,
                   now_ms: int, tolerance_ms: int = RETENTION_CHECK_MS) -> DataFrame:
    """One row per replica (topic, partition, broker, log dir): size, segments, oldest/newest record,
    hours of data kept vs configured, the retention flags, growth per day and a likely cause."""
    kept_ms = F.lit(now_ms) - F.unix_millis("oldest_record")
    longer = (F.col("retention_ms") >= 0) & (kept_ms > F.col("retention_ms") + tolerance_ms)
    over_bytes = (F.col("retention_bytes") >= 0) & (
        F.col("size_bytes") > F.col("retention_bytes") + F.coalesce(F.col("segment_bytes"), F.lit(0)))
    cause = (F.when(~longer, F.lit(None))
             .when(F.col("segments") <= 1, F.lit("only the active segment, which retention never deletes"))
             .when(F.col("segment_ms") > F.col("retention_ms"),
                   F.lit("segment.ms exceeds retention.ms: segments roll (and expire) too rarely"))
             .otherwise(F.lit("retention not enforced: broker retention check behind or log dir offline?")))
    joined = (replicas.join(topics, "topic", "left").join(times, ["topic", "partition"], "left")
              .join(replica_growth, list(REPLICA_KEYS), "left"))
    return joined.select(
        *REPLICA_KEYS, "leader", "size_bytes", "segments", "oldest_record", "newest_record",
        (kept_ms / MS_PER_HOUR).alias("kept_hours"),
        F.when(F.col("retention_ms") >= 0, F.col("retention_ms") / MS_PER_HOUR).alias("retention_hours"),
        "retention_bytes", "cleanup_policy",
        F.coalesce(longer, F.lit(False)).alias("kept_longer_than_retention"),
        F.coalesce(over_bytes, F.lit(False)).alias("over_retention_bytes"),
        "growth_bytes_per_day", cause.alias("likely_cause"))


def slowest_consumers(lag_partitions: DataFrame) -> DataFrame:
    """Per topic, the group with the largest last time lag (from the lag report's partition rows)."""
    ranked = Window.partitionBy("topic").orderBy(F.col("last_lag_seconds").desc_nulls_last(), "group")
    return (lag_partitions.where(F.col("last_lag_seconds").isNotNull())
            .withColumn("n", F.row_number().over(ranked)).where("n = 1")
            .select("topic", F.col("group").alias("slowest_group"),
                    F.col("last_lag_seconds").alias("slowest_lag_seconds")))


def topic_report(replicas: DataFrame, topics: DataFrame, compacted: DataFrame, slowest: DataFrame) -> DataFrame:
    """One row per topic: partitions, replicas, bytes on all replicas, the largest partition, record time
    span, configured retention, any replica flagged, growth, compaction figures and the slowest consumer
    (`retention_shorter_than_lag` when its time lag exceeds retention.ms)."""
    per_topic = replicas.groupBy("topic").agg(
        F.countDistinct("partition").alias("partitions"),
        F.count("*").alias("replicas"),
        F.sum("size_bytes").alias("size_bytes"),
        F.max("size_bytes").alias("largest_replica_bytes"),
        F.min("oldest_record").alias("oldest_record"),
        F.max("newest_record").alias("newest_record"),
        F.max("kept_hours").alias("kept_hours"),
        F.max(F.col("kept_longer_than_retention").cast("int")).cast("boolean").alias("kept_longer_than_retention"),
        F.max(F.col("over_retention_bytes").cast("int")).cast("boolean").alias("over_retention_bytes"),
        F.sum("growth_bytes_per_day").alias("growth_bytes_per_day"))
    compaction_totals = compacted.groupBy("topic").agg(
        F.sum("tombstones").alias("tombstones"),
        _ratio(F.sum("superseded_bytes"), F.sum("bytes")).alias("superseded_ratio"),
        F.avg("dirty_ratio").alias("dirty_ratio"))
    joined = (topics.join(per_topic, "topic", "left").join(compaction_totals, "topic", "left")
              .join(slowest, "topic", "left"))
    shorter = (F.col("retention_ms") >= 0) & (F.col("slowest_lag_seconds") * 1000 > F.col("retention_ms"))
    return joined.select(
        "topic", "cleanup_policy", "partitions", "replicas", "size_bytes", "largest_replica_bytes",
        "oldest_record", "newest_record", "kept_hours",
        F.when(F.col("retention_ms") >= 0, F.col("retention_ms") / MS_PER_HOUR).alias("retention_hours"),
        "retention_bytes", "kept_longer_than_retention", "over_retention_bytes", "growth_bytes_per_day",
        "tombstones", "superseded_ratio", "dirty_ratio", "min_cleanable_dirty_ratio",
        "slowest_group", "slowest_lag_seconds", F.coalesce(shorter, F.lit(False)).alias("retention_shorter_than_lag"))


def log_dir_report(log_dirs: DataFrame, replicas: DataFrame) -> DataFrame:
    """One row per broker log dir: capacity, replicas and their bytes, growth per day, days until full."""
    per_dir = replicas.groupBy(*LOG_DIR_KEYS).agg(
        F.count("*").alias("replicas"), F.sum("size_bytes").alias("replica_bytes"),
        F.sum("growth_bytes_per_day").alias("growth_bytes_per_day"))
    joined = log_dirs.join(per_dir, list(LOG_DIR_KEYS), "full")
    full_in = F.when(F.col("growth_bytes_per_day") > 0, F.col("usable_bytes") / F.col("growth_bytes_per_day"))
    return joined.select(*LOG_DIR_KEYS, "total_bytes", "usable_bytes",
                         F.coalesce("replicas", F.lit(0)).alias("replicas"),
                         F.coalesce("replica_bytes", F.lit(0)).alias("replica_bytes"), "growth_bytes_per_day",
                         full_in.alias("days_until_full"))


def consumers_at_risk(lag_partitions: DataFrame, topics: DataFrame, replicas: DataFrame,
                      horizon_hours: float) -> DataFrame:
    """Groups whose time lag reaches the partition's effective retention within `horizon_hours` at its
    current trend (or already exceeds it): they will skip records retention deletes first."""
    leader_growth = (replicas.where(F.coalesce("leader", F.lit(True)))
                     .groupBy("topic", "partition").agg(F.max("growth_bytes_per_day").alias("growth_bytes_per_day")))
    by_time = F.when(F.col("retention_ms") >= 0, F.col("retention_ms") / 1000.0)
    by_bytes = F.when((F.col("retention_bytes") >= 0) & (F.col("growth_bytes_per_day") > 0),
                      F.col("retention_bytes") / F.col("growth_bytes_per_day") * 86_400.0)
    retention_s = F.least(by_time, by_bytes)  # least() skips nulls
    lag_s, trend = F.col("last_lag_seconds"), F.col("lag_seconds_trend_per_hour")
    hours_left = (F.when(lag_s >= F.col("retention_s"), F.lit(0.0))
                  .when(trend > 0, (F.col("retention_s") - lag_s) / trend))
    joined = (lag_partitions.where(lag_s.isNotNull()).join(topics, "topic")
              .join(leader_growth, ["topic", "partition"], "left").withColumn("retention_s", retention_s))
    return (joined.withColumn("hours_until_data_loss", hours_left)
            .where(F.col("hours_until_data_loss") <= horizon_hours)
            .select("cluster", "group", "topic", "partition",
                    F.col("last_lag_seconds").alias("lag_seconds"), "lag_seconds_trend_per_hour",
                    (F.col("retention_s") / 3600).alias("retention_hours"),
                    F.when(by_bytes.isNotNull() & (by_time.isNull() | (by_bytes < by_time)), F.lit("retention.bytes"))
                    .otherwise(F.lit("retention.ms")).alias("retention_limited_by"),
                    "hours_until_data_loss",
                    (F.col("hours_until_data_loss") == 0).alias("already_skipping")))


def _ratio(numerator, denominator):
    numerator = F.col(numerator) if isinstance(numerator, str) else numerator
    denominator = F.col(denominator) if isinstance(denominator, str) else denominator
    return F.when(denominator > 0, numerator / denominator)
