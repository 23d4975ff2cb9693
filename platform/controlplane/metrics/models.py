"""History of the brokers' metrics, rolled up from the `__strom_metrics` topic (and of consumer lag, from
`__strom_lag_samples`) by `manage.py consume_metrics`; pruned by the Celery beat task `prune_metric_rollups`.

Every point is one bucket of one resolution (10 s, 60 s, 3600 s; `rollup.RESOLUTIONS_S`): counters are the
growth within the bucket (bytes, records, requests), gauges the last value sampled in it. Times are UTC.
Point models have no default ordering: the dashboard reads millions of rows by index and sorts nothing.
"""

from django.db import models

RESOLUTION_CHOICES = [(10, "10 s"), (60, "1 min"), (3600, "1 h")]


class BrokerMetricPoint(models.Model):
    """One broker's traffic in one bucket (all topics), and its gauges at the end of the bucket."""

    resolution = models.PositiveIntegerField(choices=RESOLUTION_CHOICES, help_text="bucket width (s)")
    start = models.DateTimeField(help_text="bucket start (UTC)")
    broker_id = models.IntegerField()
    bytes_in = models.BigIntegerField(default=0, help_text="bytes produced (appended as leader)")
    bytes_out = models.BigIntegerField(default=0, help_text="bytes fetched by consumers")
    replication_bytes_in = models.BigIntegerField(default=0)
    replication_bytes_out = models.BigIntegerField(default=0)
    messages_in = models.BigIntegerField(default=0, help_text="records produced")
    produce_requests = models.BigIntegerField(default=0)
    fetch_requests = models.BigIntegerField(default=0)
    failed_produce_requests = models.BigIntegerField(default=0)
    failed_fetch_requests = models.BigIntegerField(default=0)
    partitions = models.IntegerField(null=True)
    leaders = models.IntegerField(null=True)
    under_replicated = models.IntegerField(null=True)
    offline_replicas = models.IntegerField(null=True)
    connections = models.IntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["resolution", "broker_id", "start"],
                                               name="metrics_broker_point_unique")]
        indexes = [models.Index(fields=["resolution", "start"], name="metrics_broker_point_time")]

    def __str__(self) -> str:
        return f"broker {self.broker_id} at {self.start:%Y-%m-%d %H:%M:%S} ({self.resolution} s)"


class TopicMetricPoint(models.Model):
    """One topic's traffic in one bucket, summed over brokers; only buckets with traffic or a size change."""

    resolution = models.PositiveIntegerField(choices=RESOLUTION_CHOICES, help_text="bucket width (s)")
    start = models.DateTimeField(help_text="bucket start (UTC)")
    topic = models.CharField(max_length=249)
    bytes_in = models.BigIntegerField(default=0)
    bytes_out = models.BigIntegerField(default=0)
    messages_in = models.BigIntegerField(default=0)
    size_bytes = models.BigIntegerField(null=True, help_text="bytes on disk over all replicas, last in bucket")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["resolution", "topic", "start"],
                                               name="metrics_topic_point_unique")]
        indexes = [models.Index(fields=["resolution", "start"], name="metrics_topic_point_time")]

    def __str__(self) -> str:
        return f"{self.topic} at {self.start:%Y-%m-%d %H:%M:%S} ({self.resolution} s)"


class LogDirMetricPoint(models.Model):
    """One broker log dir's usage, last sampled in the bucket (bytes)."""

    resolution = models.PositiveIntegerField(choices=RESOLUTION_CHOICES, help_text="bucket width (s)")
    start = models.DateTimeField(help_text="bucket start (UTC)")
    broker_id = models.IntegerField()
    path = models.CharField(max_length=1024)
    size_bytes = models.BigIntegerField(help_text="bytes of partition logs in the dir")
    total_bytes = models.BigIntegerField(help_text="capacity of its file system")
    free_bytes = models.BigIntegerField(help_text="bytes still available on its file system")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["resolution", "broker_id", "path", "start"],
                                               name="metrics_log_dir_point_unique")]
        indexes = [models.Index(fields=["resolution", "start"], name="metrics_log_dir_point_time")]

    def __str__(self) -> str:
        return f"{self.path} on broker {self.broker_id} at {self.start:%Y-%m-%d %H:%M:%S}"


class LagMetricPoint(models.Model):
    """One consumer group's lag in one bucket: the largest total lag (records, summed over its partitions)
    and the largest time lag (s) evaluated in the bucket, and its worst status."""

    resolution = models.PositiveIntegerField(choices=RESOLUTION_CHOICES, help_text="bucket width (s)")
    start = models.DateTimeField(help_text="bucket start (UTC)")
    group = models.CharField(max_length=255)
    lag = models.BigIntegerField(default=0, help_text="records")
    lag_seconds = models.FloatField(default=0, help_text="seconds")
    status = models.CharField(max_length=10, help_text="Burrow group status (worst in the bucket)")
    last_ts_ms = models.BigIntegerField(default=0, help_text="evaluation summed into `last_total`")
    last_total = models.BigIntegerField(default=0, help_text="running sum of the latest evaluation's lag")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["resolution", "group", "start"],
                                               name="metrics_lag_point_unique")]
        indexes = [models.Index(fields=["resolution", "start"], name="metrics_lag_point_time")]

    def __str__(self) -> str:
        return f"{self.group} at {self.start:%Y-%m-%d %H:%M:%S} ({self.resolution} s)"


class TopicReplicaSize(models.Model):
    """The latest size of a topic's replicas on one broker (from its latest topic record)."""

    broker_id = models.IntegerField()
    topic = models.CharField(max_length=249)
    size_bytes = models.BigIntegerField()
    partitions = models.IntegerField(help_text="replicas of the topic on this broker")
    sampled_at = models.DateTimeField()

    class Meta:
        ordering = ["topic", "broker_id"]
        constraints = [models.UniqueConstraint(fields=["broker_id", "topic"], name="metrics_replica_size_unique")]
        indexes = [models.Index(fields=["topic"], name="metrics_replica_size_topic")]  # the topic list's sizes

    def __str__(self) -> str:
        return f"{self.topic} on broker {self.broker_id}"


class PartitionReplicaSize(models.Model):
    """The latest reading of one replica (a topic-partition on one broker) from its broker's topic records: the
    retention report's per-partition input. Rows of replicas that moved or topics deleted since stay until the
    broker reports them again; readers keep the rows the metadata store still places on that broker."""

    broker_id = models.IntegerField()
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    log_dir = models.CharField(max_length=1024)
    size_bytes = models.BigIntegerField()
    log_start_offset = models.BigIntegerField()
    log_end_offset = models.BigIntegerField()
    leader = models.BooleanField(help_text="the broker led the partition when it sampled")
    sampled_at = models.DateTimeField()

    class Meta:
        ordering = ["topic", "partition", "broker_id"]
        constraints = [models.UniqueConstraint(fields=["broker_id", "topic", "partition"],
                                               name="metrics_partition_size_unique")]
        indexes = [models.Index(fields=["topic", "partition"], name="metrics_partition_size_topic")]

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} on broker {self.broker_id}"


class TopicTotals(models.Model):
    """A topic's totals the topic list shows and sorts by, recomputed by `ingest` whenever a broker reports the
    topic: `size_bytes` = Σ its `TopicReplicaSize` rows (all replicas), `messages` = Σ log end − log start over its
    `PartitionReplicaSize` rows of leaders (null while no leader reported). One row per topic name, read by a
    unique-index lookup; rows of deleted topics stay, as the replica sizes do."""

    topic = models.CharField(max_length=249, unique=True)
    size_bytes = models.BigIntegerField()
    messages = models.BigIntegerField(null=True)
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["topic"]
        verbose_name_plural = "topic totals"

    def __str__(self) -> str:
        return f"{self.topic}: {self.size_bytes} bytes, {self.messages} messages"


class CounterState(models.Model):
    """The last cumulative counters read for one entity: a broker's totals (`topic` "") or one topic on it."""

    broker_id = models.IntegerField()
    topic = models.CharField(max_length=249, blank=True)
    started_ms = models.BigIntegerField()
    ts_ms = models.BigIntegerField()
    values = models.JSONField(default=dict)
    followed = models.BooleanField(default=False, help_text="broker rows: this incarnation was read from its "
                                                            "first round, so a topic first seen now is new")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker_id", "topic"], name="metrics_counter_state_unique")]

    def __str__(self) -> str:
        return f"counters of {self.topic or 'all topics'} on broker {self.broker_id}"


class ConsumedOffset(models.Model):
    """The next offset to read per partition of the samples topics; written in the same transaction as the
    rollups it produced, so a restarted consumer neither loses nor double-counts a sample."""

    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    next_offset = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["topic", "partition"], name="metrics_consumed_offset_unique")]

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} @ {self.next_offset}"
