"""`LogConfig`: the topic configs the storage layer obeys, typed, in milliseconds and bytes.

Built from a dict resolved by `kafkaspec.topic_config.resolve` (override > cluster default > Kafka
default), so names and defaults stay Kafka's. Immutable: a config change swaps the whole object.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from kafkaspec import topic_config

LONG_MAX = topic_config.LONG_MAX


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    retention_bytes: int = -1
    """-1: no size limit."""
    retention_ms: int = 604_800_000
    """-1: keep forever."""
    delete: bool = True
    """`cleanup.policy` contains `delete`: retention applies."""
    compact: bool = False
    """`cleanup.policy` contains `compact`: the cleaner keeps the latest record per key."""
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60_000
    max_message_bytes: int = 1_048_588
    log_append_time: bool = False
    """`message.timestamp.type=LogAppendTime`: the broker stamps batches with its own clock."""
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = LONG_MAX
    compression_type: str = "producer"
    """Stored as given; batches are kept in the producer's codec (no recompression yet)."""

    @classmethod
    def from_topic_configs(cls, resolved: Mapping[str, object]) -> "LogConfig":
        """From the output of `topic_config.resolve` (every key present, values typed)."""
        policy = resolved["cleanup.policy"]
        return cls(
            segment_bytes=int(resolved["segment.bytes"]),
            segment_ms=int(resolved["segment.ms"]),
            segment_jitter_ms=int(resolved["segment.jitter.ms"]),
            segment_index_bytes=int(resolved["segment.index.bytes"]),
            index_interval_bytes=int(resolved["index.interval.bytes"]),
            retention_bytes=int(resolved["retention.bytes"]),
            retention_ms=int(resolved["retention.ms"]),
            delete="delete" in policy,
            compact="compact" in policy,
            delete_retention_ms=int(resolved["delete.retention.ms"]),
            min_compaction_lag_ms=int(resolved["min.compaction.lag.ms"]),
            max_compaction_lag_ms=int(resolved["max.compaction.lag.ms"]),
            min_cleanable_dirty_ratio=float(resolved["min.cleanable.dirty.ratio"]),
            flush_messages=int(resolved["flush.messages"]),
            flush_ms=int(resolved["flush.ms"]),
            file_delete_delay_ms=int(resolved["file.delete.delay.ms"]),
            max_message_bytes=int(resolved["max.message.bytes"]),
            log_append_time=resolved["message.timestamp.type"] == "LogAppendTime",
            timestamp_before_max_ms=int(resolved["message.timestamp.before.max.ms"]),
            timestamp_after_max_ms=int(resolved["message.timestamp.after.max.ms"]),
            compression_type=str(resolved["compression.type"]),
        )

    @classmethod
    def resolve(cls, overrides: Mapping[str, object], cluster_defaults: Mapping[str, object] | None = None
                ) -> "LogConfig":
        """Validate topic overrides (InvalidConfigError) and layer them over the cluster defaults."""
        return cls.from_topic_configs(topic_config.resolve(overrides, cluster_defaults))  # type: ignore[arg-type]

    @property
    def max_index_entries(self) -> int:
        """Entries an offset index may hold before the segment must roll (`segment.index.bytes` / 8)."""
        return max(1, self.segment_index_bytes // 8)
