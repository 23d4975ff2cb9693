"""The lag monitor's configuration: frozen dataclasses, validated without I/O (Burrow's `Configure`).

`MonitorConfig.from_mapping` reads Burrow's key names where Burrow has the setting (`offset-refresh`,
`intervals`, `min-distance`, `expire-group`, `group-allowlist`, `allowed-lag`, `minimum-complete`, …) so a
Burrow configuration's values carry over; Strom's own settings use the same hyphenated style.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

DAY_MS = 86_400_000
SAMPLES_TOPIC = "__strom_lag_samples"
OFFSETS_TOPIC = "__consumer_offsets"


class ConfigError(ValueError):
    """A setting is missing, of the wrong type or out of range; the message names it."""


@dataclass(frozen=True)
class Threshold:
    """Strom's optional limit on top of Burrow's rules: a partition of a group matching `group` (a shell
    glob, fnmatch) and a topic matching `topic` breaches it when its lag exceeds `max_lag` records or its
    lag in seconds exceeds `max_lag_seconds` (either may be None)."""

    group: str = "*"
    topic: str = "*"
    max_lag: int | None = None
    max_lag_seconds: float | None = None


@dataclass(frozen=True)
class MonitorConfig:
    """Everything the monitor needs. Times in seconds as in Burrow's files (`*_s`), unless `_ms`."""

    bootstrap_servers: str
    cluster: str = "local"
    # collector (Burrow's cluster and consumer modules)
    offset_refresh_s: float = 10.0
    topic_refresh_s: float = 60.0
    group_allowlist: str | None = None
    group_denylist: str | None = None
    topic_allowlist: str | None = None
    topic_denylist: str | None = None
    client_config: Mapping[str, str] = field(default_factory=dict)  # extra librdkafka settings (security, …)
    # storage
    intervals: int = 10
    min_distance_s: float = 0.0
    expire_group_s: float = 604_800.0
    # evaluator
    allowed_lag: int = 0
    minimum_complete: float = 0.0
    evaluation_interval_s: float | None = None  # default: offset_refresh_s
    lag_seconds: bool = True  # read record times from the log (Strom); False = Burrow's rules only
    lag_seconds_lookups: int = 2000  # partitions whose records are fetched per round, at most
    min_stop_grace_s: float | None = None  # default: 3 × offset_refresh_s
    thresholds: tuple[Threshold, ...] = ()
    # lag history
    samples_topic: str | None = SAMPLES_TOPIC  # None: no samples written
    samples_retention_ms: int = 7 * DAY_MS
    samples_partitions: int = 3
    # persistence
    state_save_interval_s: float = 60.0

    def __post_init__(self) -> None:
        if not self.bootstrap_servers:
            raise ConfigError("bootstrap-servers is required")
        if not self.cluster or not re.fullmatch(r"[A-Za-z0-9._-]+", self.cluster):
            raise ConfigError(f"cluster must be a name of letters, digits, '.', '_', '-', got {self.cluster!r}")
        for name in ("offset_refresh_s", "topic_refresh_s", "state_save_interval_s"):
            _positive(name, getattr(self, name))
        for name in ("evaluation_interval_s", "min_stop_grace_s"):
            if getattr(self, name) is not None:
                _positive(name, getattr(self, name))
        if self.intervals < 1:
            raise ConfigError(f"intervals must be at least 1, got {self.intervals}")
        if self.min_distance_s < 0 or self.expire_group_s <= 0 or self.allowed_lag < 0:
            raise ConfigError("min-distance and allowed-lag must be >= 0, expire-group > 0")
        if not 0.0 <= self.minimum_complete <= 1.0:
            raise ConfigError(f"minimum-complete must be within 0.0-1.0, got {self.minimum_complete}")
        if self.lag_seconds_lookups < 0:
            raise ConfigError(f"lag-seconds-lookups must be >= 0, got {self.lag_seconds_lookups}")
        if self.samples_retention_ms <= 0 or self.samples_partitions < 1:
            raise ConfigError("samples-retention-ms and samples-partitions must be positive")
        for name in ("group_allowlist", "group_denylist", "topic_allowlist", "topic_denylist"):
            pattern = getattr(self, name)
            if pattern:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(f"{_key(name)} is not a regular expression: {exc}") from exc
        for threshold in self.thresholds:
            if threshold.max_lag is None and threshold.max_lag_seconds is None:
                raise ConfigError(f"threshold for group {threshold.group!r} sets neither max-lag nor max-lag-seconds")

    @property
    def evaluation_interval_ms(self) -> int:
        return int(1000 * (self.evaluation_interval_s or self.offset_refresh_s))

    @property
    def min_stop_grace_ms(self) -> int:
        return int(1000 * (self.min_stop_grace_s if self.min_stop_grace_s is not None else 3 * self.offset_refresh_s))

    @classmethod
    def from_mapping(cls, data: Mapping) -> "MonitorConfig":
        """Build from a mapping with hyphenated keys (a parsed JSON or TOML file); unknown keys are errors."""
        known = {_key(f.name): f.name for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        if "bootstrap-servers" not in data:
            raise ConfigError("bootstrap-servers is required")
        values = {known[k]: v for k, v in data.items()}
        if "thresholds" in values:
            try:
                values["thresholds"] = tuple(Threshold(**{k.replace("-", "_"): v for k, v in t.items()})
                                             for t in values["thresholds"])
            except TypeError as exc:
                raise ConfigError(f"bad threshold: {exc}") from exc
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(str(exc)) from exc


def _key(name: str) -> str:
    """The file key of a field: hyphens, no unit suffix (`offset_refresh_s` → `offset-refresh`)."""
    for suffix in ("_s",):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.replace("_", "-")


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{_key(name)} must be positive, got {value}")
