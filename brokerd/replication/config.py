"""Replication settings (Kafka broker keys), validated from `BrokerConfig.properties`."""

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    replica_lag_time_max_ms: int = 30_000
    """`replica.lag.time.max.ms`: an ISR follower not caught up for this long is removed from the ISR."""
    replica_fetch_wait_max_ms: int = 500
    """`replica.fetch.wait.max.ms`: follower fetch long-poll window."""
    replica_fetch_max_bytes: int = 1_048_576
    """`replica.fetch.max.bytes`: per partition (at least one batch is always returned)."""
    replica_fetch_response_max_bytes: int = 10_485_760
    """`replica.fetch.response.max.bytes`."""
    replica_fetch_backoff_ms: int = 50
    """`replica.fetch.backoff.ms` after an error (Kafka: 1000; Strom fails over faster)."""
    socket_timeout_ms: int = 30_000
    """`replica.socket.timeout.ms`: a fetch unanswered for this long is retried on a new connection."""
    fetch_session_cache_slots: int = 1000
    """`max.incremental.fetch.session.cache.slots`: fetch sessions (KIP-227) this broker keeps as a leader."""


def replication_config(properties: Mapping[str, str]) -> ReplicationConfig:
    def value(key: str, default: int) -> int:
        raw = properties.get(key)
        return default if raw is None else int(raw)

    defaults = ReplicationConfig()
    return ReplicationConfig(
        replica_lag_time_max_ms=value("replica.lag.time.max.ms", defaults.replica_lag_time_max_ms),
        replica_fetch_wait_max_ms=value("replica.fetch.wait.max.ms", defaults.replica_fetch_wait_max_ms),
        replica_fetch_max_bytes=value("replica.fetch.max.bytes", defaults.replica_fetch_max_bytes),
        replica_fetch_response_max_bytes=value("replica.fetch.response.max.bytes",
                                               defaults.replica_fetch_response_max_bytes),
        replica_fetch_backoff_ms=value("replica.fetch.backoff.ms", defaults.replica_fetch_backoff_ms),
        socket_timeout_ms=value("replica.socket.timeout.ms", defaults.socket_timeout_ms),
        fetch_session_cache_slots=value("max.incremental.fetch.session.cache.slots",
                                        defaults.fetch_session_cache_slots),
    )
