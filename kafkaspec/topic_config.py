"""Per-topic configs: Kafka's names, types, defaults and validation (Kafka 3.9 `TopicConfig`/`LogConfig`).

A topic stores only its overrides; `resolve` layers them over the broker-level defaults (`log.*` keys of
`server.properties`) and Kafka's own defaults, yielding typed values. Durations are milliseconds, sizes bytes.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
MAX_PARTITIONS = 100_000
"""Partitions a topic may have, Strom's sanity bound (Kafka has none short of memory): CreateTopics and
CreatePartitions beyond it are refused with INVALID_PARTITIONS instead of exhausting a broker or the
control plane."""


class ConfigType(Enum):
    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"


class InvalidConfigError(ValueError):
    """A config name or value Kafka would refuse (wire: INVALID_CONFIG, HTTP: 400)."""


Value = bool | str | int | float | tuple[str, ...]


@dataclass(frozen=True)
class ConfigDef:
    """One topic config. `broker_key` is the `server.properties` key whose value is the cluster default."""

    name: str
    type: ConfigType
    default: Value
    doc: str
    broker_key: str | None = None
    validate: Callable[[Value], str | None] = lambda value: None

    def parse(self, raw: object) -> Value:
        """Convert a string (or already typed) value to this config's type and validate it."""
        try:
            value = _PARSERS[self.type](raw)
        except (TypeError, ValueError):
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {self.name}: Expected value to be a "
                f"{'32-bit integer' if self.type is ConfigType.INT else self.type.value}"
            ) from None
        problem = self.validate(value)
        if problem:
            raise InvalidConfigError(f"Invalid value {raw} for configuration {self.name}: {problem}")
        return value

    def render(self, value: Value) -> str:
        """The string form Kafka's DescribeConfigs shows."""
        if self.type is ConfigType.BOOLEAN:
            return "true" if value else "false"
        if self.type is ConfigType.LIST:
            return ",".join(value)  # type: ignore[arg-type]
        return str(value)


def _parse_bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(raw)
    return text == "true"


def _parse_int(bits: int) -> Callable[[object], int]:
    limit = 2 ** (bits - 1)

    def parse(raw: object) -> int:
        if isinstance(raw, bool | float):
            raise ValueError(raw)
        value = int(str(raw).strip())
        if not -limit <= value < limit:
            raise ValueError(raw)
        return value

    return parse


def _parse_list(raw: object) -> tuple[str, ...]:
    items = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    return tuple(s.strip() for s in items if str(s).strip())


_PARSERS: dict[ConfigType, Callable[[object], Value]] = {
    ConfigType.BOOLEAN: _parse_bool,
    ConfigType.STRING: lambda raw: str(raw).strip(),
    ConfigType.INT: _parse_int(32),
    ConfigType.LONG: _parse_int(64),
    ConfigType.DOUBLE: lambda raw: float(str(raw).strip()),
    ConfigType.LIST: _parse_list,
}


def at_least(minimum: float) -> Callable[[Value], str | None]:
    return lambda v: None if v >= minimum else f"Value must be at least {minimum}"  # type: ignore[operator]


def between(low: float, high: float) -> Callable[[Value], str | None]:
    return lambda v: None if low <= v <= high else f"Value must be no less than {low} and no more than {high}"  # type: ignore[operator]


def one_of(*allowed: str) -> Callable[[Value], str | None]:
    return lambda v: None if v in allowed else f"String must be one of: {', '.join(allowed)}"


def each_one_of(*allowed: str) -> Callable[[Value], str | None]:
    def check(values: Value) -> str | None:
        bad = [v for v in values if v not in allowed]  # type: ignore[union-attr]
        return f"Invalid value(s) {bad}; must be one of {list(allowed)}" if bad else None

    return check


def _non_empty_policy(values: Value) -> str | None:
    return each_one_of("compact", "delete")(values) or (None if values else "Value must not be empty")


_REPLICA_ENTRY = re.compile(r"[0-9]+:[0-9]+")


def _throttled_replica_list(values: Value) -> str | None:
    """Kafka's ThrottledReplicaListValidator: "*" or `partition:broker` entries."""
    if values == ("*",) or all(_REPLICA_ENTRY.fullmatch(v) for v in values):  # type: ignore[union-attr]
        return None
    return "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],..."


T = ConfigType
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef("cleanup.policy", T.LIST, ("delete",), "delete and/or compact old segments",
                  "log.cleanup.policy", _non_empty_policy),
        ConfigDef("compression.type", T.STRING, "producer", "final compression of stored batches",
                  "compression.type", one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
        ConfigDef("delete.retention.ms", T.LONG, 86_400_000, "how long tombstones survive compaction",
                  "log.cleaner.delete.retention.ms", at_least(0)),
        ConfigDef("file.delete.delay.ms", T.LONG, 60_000, "delay before a deleted segment's files go",
                  "log.segment.delete.delay.ms", at_least(0)),
        ConfigDef("flush.messages", T.LONG, LONG_MAX, "fsync after this many messages",
                  "log.flush.interval.messages", at_least(1)),
        ConfigDef("flush.ms", T.LONG, LONG_MAX, "fsync after this many milliseconds",
                  "log.flush.interval.ms", at_least(0)),
        ConfigDef("follower.replication.throttled.replicas", T.LIST, (),
                  "replicas (partition:broker) whose fetches as followers count against the broker's "
                  "follower.replication.throttled.rate while out of sync, or *", None, _throttled_replica_list),
        ConfigDef("index.interval.bytes", T.INT, 4096, "bytes between offset-index entries",
                  "log.index.interval.bytes", at_least(0)),
        ConfigDef("leader.replication.throttled.replicas", T.LIST, (),
                  "replicas (partition:broker) whose answers as leader to out-of-sync followers count against the "
                  "broker's leader.replication.throttled.rate, or *", None, _throttled_replica_list),
        ConfigDef("max.compaction.lag.ms", T.LONG, LONG_MAX, "longest a record stays uncompacted",
                  "log.cleaner.max.compaction.lag.ms", at_least(1)),
        ConfigDef("max.message.bytes", T.INT, 1_048_588, "largest record batch accepted",
                  "message.max.bytes", at_least(0)),
        ConfigDef("message.timestamp.after.max.ms", T.LONG, LONG_MAX,
                  "how far in the future a CreateTime timestamp may be",
                  "log.message.timestamp.after.max.ms", at_least(0)),
        ConfigDef("message.timestamp.before.max.ms", T.LONG, LONG_MAX,
                  "how far in the past a CreateTime timestamp may be",
                  "log.message.timestamp.before.max.ms", at_least(0)),
        ConfigDef("message.timestamp.type", T.STRING, "CreateTime", "CreateTime or LogAppendTime",
                  "log.message.timestamp.type", one_of("CreateTime", "LogAppendTime")),
        ConfigDef("min.cleanable.dirty.ratio", T.DOUBLE, 0.5, "dirty share that triggers compaction",
                  "log.cleaner.min.cleanable.ratio", between(0, 1)),
        ConfigDef("min.compaction.lag.ms", T.LONG, 0, "shortest a record stays uncompacted",
                  "log.cleaner.min.compaction.lag.ms", at_least(0)),
        ConfigDef("min.insync.replicas", T.INT, 1, "ISR size below which acks=all writes fail",
                  "min.insync.replicas", at_least(1)),
        ConfigDef("preallocate", T.BOOLEAN, False, "preallocate segment files", "log.preallocate"),
        ConfigDef("retention.bytes", T.LONG, -1, "size above which old segments are deleted (-1: none)",
                  "log.retention.bytes"),
        ConfigDef("retention.ms", T.LONG, 604_800_000, "age after which segments are deleted (-1: never)",
                  "log.retention.ms", at_least(-1)),
        ConfigDef("segment.bytes", T.INT, 1_073_741_824, "segment file size that triggers a roll",
                  "log.segment.bytes", at_least(14)),
        ConfigDef("segment.index.bytes", T.INT, 10_485_760, "offset-index file size limit",
                  "log.index.size.max.bytes", at_least(4)),
        ConfigDef("segment.jitter.ms", T.LONG, 0, "random jitter subtracted from segment.ms",
                  "log.roll.jitter.ms", at_least(0)),
        ConfigDef("segment.ms", T.LONG, 604_800_000, "segment age that triggers a roll",
                  "log.roll.ms", at_least(1)),
        ConfigDef("unclean.leader.election.enable", T.BOOLEAN, False,
                  "allow an out-of-sync replica to become leader", "unclean.leader.election.enable"),
    )
}


def validate_overrides(overrides: Mapping[str, object]) -> dict[str, Value]:
    """Parse and validate topic overrides; unknown names are refused like Kafka does."""
    parsed: dict[str, Value] = {}
    for name, raw in overrides.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        parsed[name] = definition.parse(raw)
    return parsed


def broker_defaults(server_properties: Mapping[str, object]) -> dict[str, Value]:
    """Cluster-wide topic defaults from broker keys (`log.retention.ms`, `log.segment.bytes`, …).

    Kafka also accepts `log.retention.hours`/`.minutes` and `log.roll.hours`; the most precise one wins.
    """
    props = dict(server_properties)
    for coarse, fine, factor in (
        ("log.retention.hours", "log.retention.ms", 3_600_000),
        ("log.retention.minutes", "log.retention.ms", 60_000),
        ("log.roll.hours", "log.roll.ms", 3_600_000),
    ):
        if coarse in props and fine not in props:
            props[fine] = int(str(props[coarse])) * factor
    defaults: dict[str, Value] = {}
    for definition in TOPIC_CONFIGS.values():
        if definition.broker_key and definition.broker_key in props:
            defaults[definition.name] = definition.parse(props[definition.broker_key])
    return defaults


def resolve(overrides: Mapping[str, object], cluster_defaults: Mapping[str, Value] | None = None
            ) -> dict[str, Value]:
    """Every topic config with its effective typed value: override > cluster default > Kafka default."""
    effective = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    effective.update(cluster_defaults or {})
    effective.update(validate_overrides(overrides))
    return effective
