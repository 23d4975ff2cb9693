"""Broker configuration: Kafka `server.properties` keys in, one validated frozen `BrokerConfig` out.

Sources, later wins: a properties file, then `--override key=value`, then the dedicated CLI flags
(`--listeners`, `--log-dirs`). Unknown keys are kept in `properties` (topic defaults such as
`log.retention.ms` are read from there by `kafkaspec.topic_config.broker_defaults`). No I/O here except
`load_properties`, which reads the file it is given. Durations are milliseconds, sizes bytes.
"""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkaspec import topic_config
from kafkaspec.listeners import Endpoint as Listener
from kafkaspec.listeners import InvalidListenerError
from kafkaspec.listeners import parse_listeners as parse_listener_list


class ConfigError(ValueError):
    """A config key or value the broker cannot start with (CLI: one line, exit status 2)."""


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The group coordinator's Kafka broker keys (durations in ms, sizes in bytes)."""

    min_session_timeout_ms: int = 6_000
    """`group.min.session.timeout.ms`"""
    max_session_timeout_ms: int = 1_800_000
    """`group.max.session.timeout.ms`"""
    initial_rebalance_delay_ms: int = 3_000
    """`group.initial.rebalance.delay.ms`: how long a new (Empty) group waits for more members to join."""
    max_size: int = 2**31 - 1
    """`group.max.size`"""
    offsets_retention_ms: int = 10_080 * 60_000
    """`offsets.retention.minutes` (7 days), in ms."""
    offsets_retention_check_interval_ms: int = 600_000
    """`offsets.retention.check.interval.ms`"""
    offsets_topic_num_partitions: int = 50
    """`offsets.topic.num.partitions`: partitions of `__consumer_offsets` when it is created."""
    offsets_topic_replication_factor: int = 3
    """`offsets.topic.replication.factor` (standalone: 1). Until this many brokers are alive,
    FindCoordinator answers COORDINATOR_NOT_AVAILABLE rather than create the topic with fewer replicas."""
    offset_metadata_max_bytes: int = 4_096
    """`offset.metadata.max.bytes`"""
    offsets_commit_timeout_ms: int = 5_000
    """`offsets.commit.timeout.ms`: how long a coordinator write waits for the ISR (acks=all)."""
    offsets_load_buffer_size: int = 5_242_880
    """`offsets.load.buffer.size`: bytes read per step while loading a `__consumer_offsets` partition."""


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """The broker's metrics keys (`strom.metrics.*`; durations in ms)."""

    enable: bool = True
    """`strom.metrics.enable`: false counts nothing and serves and publishes nothing (to measure what metrics
    cost; the console's history and Prometheus then have no data from this broker)."""
    port: int | None = None
    """`strom.metrics.port`: serve Prometheus `/metrics` on this TCP port (0: any free port); None: no endpoint."""
    host: str = ""
    """`strom.metrics.host`: the address `/metrics` binds; "" = the host of the first listener."""
    sample_interval_ms: int = 10_000
    """`strom.metrics.sample.interval.ms`: how often a sample is published to `__strom_metrics`."""
    full_sample_interval_ms: int = 3_600_000
    """`strom.metrics.full.sample.interval.ms`: every topic is published at least this often; in between only
    topics whose counters or log sizes changed."""
    topic_enable: bool = True
    """`strom.metrics.topic.enable`: publish samples to `__strom_metrics` at all."""
    topic_partitions: int = 3
    """`strom.metrics.topic.num.partitions`, used when the broker creates `__strom_metrics`."""
    topic_replication_factor: int = 3
    """`strom.metrics.topic.replication.factor` (standalone: 1); the topic is created once this many brokers are
    alive, so samples are not published before."""
    topic_retention_ms: int = 3 * 86_400_000
    """`strom.metrics.topic.retention.ms`: how long samples stay; the control plane may be down this long
    without losing history."""


INT_MAX = 2**31 - 1
MIN_SLICE_US, MAX_SLICE_US = 100, 100_000
"""The range of a custom CPU slice the kernel takes (`strom.sched.slice.us`, `brokerd.sched_slice`)."""
MAX_LOOP_PRIORITY = 99
"""The highest SCHED_FIFO priority (`strom.sched.loop.priority`, `brokerd.loop_priority`)."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one client connection, one address and all clients together may hold (Kafka's socket-server
    keys; sizes in bytes, durations in ms)."""

    request_max_bytes: int = 104_857_600
    """`socket.request.max.bytes`: a size prefix above it closes the connection before any byte of the
    frame is buffered."""
    max_idle_ms: int = 600_000
    """`connections.max.idle.ms`: a connection that completes no request and drains no response for this
    long is closed (a client trickling bytes, slowloris, or never reading its responses included)."""
    max_connections: int = INT_MAX
    """`max.connections`: connections beyond it are closed as soon as they are accepted."""
    max_connections_per_ip: int = INT_MAX
    """`max.connections.per.ip`: a new connection from an address holding this many is closed at once."""
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    """`max.connections.per.ip.overrides` (`host:count,...`): per-address exceptions."""

    def per_ip_limit(self, host: str) -> int:
        return self.max_connections_per_ip_overrides.get(host, self.max_connections_per_ip)


@dataclass(frozen=True)
class BrokerConfig:
    node_id: int
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    log_dirs: tuple[Path, ...]
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    message_max_bytes: int = 1_048_588
    shutdown_timeout_ms: int = 30_000
    controlplane_url: str | None = None
    """Cluster mode (`strom.controlplane.url`); None runs standalone."""
    cluster_secret: str | None = field(default=None, repr=False)
    """`strom.cluster.secret` or $STROM_CLUSTER_SECRET: the bearer token of the internal API."""
    rack: str | None = None
    sched_slice_us: int = 0
    """`strom.sched.slice.us`: the CPU slice the broker's threads ask the kernel for (`brokerd.sched_slice`; 100 to
    100,000 µs); 0: the kernel's default, also when the process that started the broker had asked for another."""
    loop_priority: int = 0
    """`strom.sched.loop.priority`: 1-99 runs the event-loop thread under SCHED_FIFO at this priority while it uses
    under half a CPU (`brokerd.loop_priority`); 0: off."""
    slow_callback_ms: int = 0
    """`strom.loop.slow.callback.ms`: > 0 logs every event-loop callback that holds the loop this long
    (`brokerd.slow_callbacks`); 0: off."""
    log_retention_check_interval_ms: int = 300_000
    """`log.retention.check.interval.ms` (Kafka's default): how often log maintenance checks every log's
    retention (`storage.LogManager`)."""
    groups: GroupSettings = field(default_factory=GroupSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    properties: Mapping[str, str] = field(default_factory=dict)
    """Every key as given, for consumers of other keys (topic defaults, later issues)."""

    @property
    def topic_defaults(self) -> dict[str, topic_config.Value]:
        return topic_config.broker_defaults(self.properties)


def parse_listeners(value: str, key: str) -> tuple[Listener, ...]:
    try:
        return tuple(parse_listener_list(value))
    except InvalidListenerError as e:
        raise ConfigError(f"{key}: {e}") from None


def load_properties(path: Path) -> dict[str, str]:
    """Java `.properties` subset Kafka configs use: `key=value` / `key: value`, `#`/`!` comments,
    backslash line continuations."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    return parse_properties(text, str(path))


def parse_properties(text: str, source: str) -> dict[str, str]:
    """The properties of `text` (the syntax of `load_properties`); `source` names it in errors."""
    properties: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if not match:
            raise ConfigError(f"{source}: cannot parse line '{line}'")
        properties[match[1]] = match[2]
    return properties


def _sched_slice_us(properties: Mapping[str, str]) -> int:
    """`strom.sched.slice.us`: 0, or within the kernel's range for a custom slice."""
    value = _int(properties, "strom.sched.slice.us", 0)
    if value and not MIN_SLICE_US <= value <= MAX_SLICE_US:
        raise ConfigError(f"strom.sched.slice.us: {value} is outside {MIN_SLICE_US}-{MAX_SLICE_US} (0: the kernel's "
                          "default)")
    return value


def _loop_priority(properties: Mapping[str, str]) -> int:
    """`strom.sched.loop.priority`: 0, or a SCHED_FIFO priority."""
    value = _int(properties, "strom.sched.loop.priority", 0)
    if value > MAX_LOOP_PRIORITY:
        raise ConfigError(f"strom.sched.loop.priority: {value} is outside 1-{MAX_LOOP_PRIORITY} (0: off)")
    return value


def _int(properties: Mapping[str, str], key: str, default: int, minimum: int = 0) -> int:
    raw = properties.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{key}: '{raw}' is not an integer") from None
    if value < minimum:
        raise ConfigError(f"{key}: {value} is below the minimum {minimum}")
    return value


def _bool(properties: Mapping[str, str], key: str, default: bool) -> bool:
    raw = properties.get(key)
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise ConfigError(f"{key}: '{raw}' is not true or false")
    return raw.strip().lower() == "true"


def group_settings(properties: Mapping[str, str], standalone: bool) -> GroupSettings:
    """The group keys of `properties`; `offsets.topic.replication.factor` defaults to 1 when standalone."""
    defaults = GroupSettings()
    settings = GroupSettings(
        min_session_timeout_ms=_int(properties, "group.min.session.timeout.ms", defaults.min_session_timeout_ms),
        max_session_timeout_ms=_int(properties, "group.max.session.timeout.ms", defaults.max_session_timeout_ms),
        initial_rebalance_delay_ms=_int(properties, "group.initial.rebalance.delay.ms",
                                        defaults.initial_rebalance_delay_ms),
        max_size=_int(properties, "group.max.size", defaults.max_size, 1),
        offsets_retention_ms=_int(properties, "offsets.retention.minutes", defaults.offsets_retention_ms // 60_000,
                                  1) * 60_000,
        offsets_retention_check_interval_ms=_int(properties, "offsets.retention.check.interval.ms",
                                                 defaults.offsets_retention_check_interval_ms, 1),
        offsets_topic_num_partitions=_int(properties, "offsets.topic.num.partitions",
                                          defaults.offsets_topic_num_partitions, 1),
        offsets_topic_replication_factor=_int(properties, "offsets.topic.replication.factor",
                                              1 if standalone else defaults.offsets_topic_replication_factor, 1),
        offset_metadata_max_bytes=_int(properties, "offset.metadata.max.bytes", defaults.offset_metadata_max_bytes),
        offsets_commit_timeout_ms=_int(properties, "offsets.commit.timeout.ms", defaults.offsets_commit_timeout_ms, 1),
        offsets_load_buffer_size=_int(properties, "offsets.load.buffer.size", defaults.offsets_load_buffer_size, 1),
    )
    if settings.min_session_timeout_ms > settings.max_session_timeout_ms:
        raise ConfigError(f"group.min.session.timeout.ms: {settings.min_session_timeout_ms} is above "
                          f"group.max.session.timeout.ms {settings.max_session_timeout_ms}")
    return settings


def metrics_settings(properties: Mapping[str, str], standalone: bool) -> MetricsSettings:
    """The `strom.metrics.*` keys of `properties`; the topic's replication factor defaults to 1 standalone."""
    defaults = MetricsSettings()
    port = None if properties.get("strom.metrics.port", "").strip() in ("", "-1") else \
        _int(properties, "strom.metrics.port", 0)
    if port is not None and port > 65535:
        raise ConfigError(f"strom.metrics.port: {port} is not a TCP port")
    return MetricsSettings(
        enable=_bool(properties, "strom.metrics.enable", defaults.enable),
        port=port,
        host=properties.get("strom.metrics.host", defaults.host).strip(),
        sample_interval_ms=_int(properties, "strom.metrics.sample.interval.ms", defaults.sample_interval_ms, 100),
        full_sample_interval_ms=_int(properties, "strom.metrics.full.sample.interval.ms",
                                     defaults.full_sample_interval_ms, 100),
        topic_enable=_bool(properties, "strom.metrics.topic.enable", defaults.topic_enable),
        topic_partitions=_int(properties, "strom.metrics.topic.num.partitions", defaults.topic_partitions, 1),
        topic_replication_factor=_int(properties, "strom.metrics.topic.replication.factor",
                                      1 if standalone else defaults.topic_replication_factor, 1),
        topic_retention_ms=_int(properties, "strom.metrics.topic.retention.ms", defaults.topic_retention_ms, 1),
    )


def connection_limits(properties: Mapping[str, str]) -> ConnectionLimits:
    """Kafka's socket-server limits; `max.connections.per.ip` 0 admits only the addresses overridden."""
    defaults = ConnectionLimits()
    overrides: dict[str, int] = {}
    for item in properties.get("max.connections.per.ip.overrides", "").split(","):
        if not item.strip():
            continue
        host, sep, count = item.strip().rpartition(":")
        if not sep or not host or not re.fullmatch(r"[0-9]+", count.strip()):
            raise ConfigError(f"max.connections.per.ip.overrides: '{item.strip()}' is not host:count")
        overrides[host.strip("[]")] = int(count.strip())
    per_ip = _int(properties, "max.connections.per.ip", defaults.max_connections_per_ip)
    if per_ip == 0 and not overrides:
        raise ConfigError("max.connections.per.ip: 0 admits nobody unless max.connections.per.ip.overrides "
                          "names some addresses")
    return ConnectionLimits(
        request_max_bytes=_int(properties, "socket.request.max.bytes", defaults.request_max_bytes, 1),
        max_idle_ms=_int(properties, "connections.max.idle.ms", defaults.max_idle_ms, 1),
        max_connections=_int(properties, "max.connections", defaults.max_connections, 1),
        max_connections_per_ip=per_ip,
        max_connections_per_ip_overrides=overrides,
    )


def build_config(properties: Mapping[str, str], environ: Mapping[str, str] | None = None) -> BrokerConfig:
    """Validate `properties` (Kafka key names) into a BrokerConfig. Raises ConfigError."""
    environ = os.environ if environ is None else environ
    url = properties.get("strom.controlplane.url") or None
    secret = properties.get("strom.cluster.secret") or environ.get("STROM_CLUSTER_SECRET") or None
    if url is not None:
        if not re.match(r"^http://[^/\s]+(/.*)?$", url):
            raise ConfigError(f"strom.controlplane.url: '{url}' is not http://host:port")
        if not secret:
            raise ConfigError("cluster mode needs the cluster secret: set STROM_CLUSTER_SECRET or "
                              "--override strom.cluster.secret=...")
        if "node.id" not in properties and "broker.id" not in properties:
            raise ConfigError("cluster mode needs --broker-id (Kafka key node.id or broker.id)")
    for key in ("replica.lag.time.max.ms", "replica.fetch.wait.max.ms", "replica.fetch.max.bytes",
                "replica.fetch.backoff.ms", "replica.fetch.response.max.bytes", "replica.socket.timeout.ms"):
        _int(properties, key, 0, 1)
    _int(properties, "max.incremental.fetch.session.cache.slots", 0, 0)
    listeners = parse_listeners(properties.get("listeners", "PLAINTEXT://127.0.0.1:9092"), "listeners")
    advertised = (parse_listeners(properties["advertised.listeners"], "advertised.listeners")
                  if "advertised.listeners" in properties else listeners)
    raw_dirs = properties.get("log.dirs") or properties.get("log.dir") or "/tmp/kafka-logs"
    log_dirs = tuple(Path(d.strip()) for d in raw_dirs.split(",") if d.strip())
    if not log_dirs:
        raise ConfigError("log.dirs: no directory given")
    node_key = "node.id" if "node.id" in properties else "broker.id"
    try:
        topic_config.broker_defaults(properties)
    except (topic_config.InvalidConfigError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    return BrokerConfig(
        node_id=_int(properties, node_key, 1),
        listeners=listeners,
        advertised_listeners=advertised,
        log_dirs=log_dirs,
        connections=connection_limits(properties),
        auto_create_topics_enable=_bool(properties, "auto.create.topics.enable", True),
        num_partitions=_int(properties, "num.partitions", 1, 1),
        default_replication_factor=_int(properties, "default.replication.factor", 1, 1),
        message_max_bytes=_int(properties, "message.max.bytes", 1_048_588, 0),
        controlplane_url=url,
        cluster_secret=secret if url is not None else None,
        rack=properties.get("broker.rack") or None,
        sched_slice_us=_sched_slice_us(properties),
        loop_priority=_loop_priority(properties),
        slow_callback_ms=_int(properties, "strom.loop.slow.callback.ms", 0, 0),
        log_retention_check_interval_ms=_int(properties, "log.retention.check.interval.ms", 300_000, 1),
        groups=group_settings(properties, standalone=url is None),
        metrics=metrics_settings(properties, standalone=url is None),
        properties=dict(properties),
    )
