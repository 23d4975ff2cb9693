"""Kafka's replication throttles (ops.html "rep-throttle"): the broker-level dynamic rates and the topic-level
lists of throttled replicas, as the control plane stores them and brokers apply them.

- Broker dynamic configs (per broker id, or the cluster-wide default every broker falls back to):
  `leader.replication.throttled.rate` bounds the bytes/s a broker sends, as leader, to followers it throttles;
  `follower.replication.throttled.rate` the bytes/s it fetches, as follower, for replicas it throttles.
  Default: unbounded (Long.MAX_VALUE), i.e. no throttle.
- Topic configs (validated in `topic_config`): `leader.replication.throttled.replicas` /
  `follower.replication.throttled.replicas`, `partition:broker` entries or `*` (every replica). Broker B
  throttles, as leader, partition p when the leader list names `p:B`; as follower when the follower list does.

As in Kafka, only traffic of replicas outside the ISR is throttled: an in-sync follower is never slowed down.
"""

from collections.abc import Mapping

from kafkaspec.topic_config import LONG_MAX, ConfigDef, ConfigType, InvalidConfigError, Value, at_least

__all__ = ("ALL_PARTITIONS", "BROKER_DYNAMIC_CONFIGS", "FOLLOWER_RATE", "FOLLOWER_REPLICAS", "LEADER_RATE",
           "LEADER_REPLICAS", "UNTHROTTLED", "format_replicas", "rate", "throttled_partitions",
           "validate_broker_overrides")

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
UNTHROTTLED = LONG_MAX
"""A rate of Long.MAX_VALUE bytes/s: Kafka's default, no throttle."""

BROKER_DYNAMIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d for d in (
        ConfigDef(LEADER_RATE, ConfigType.LONG, UNTHROTTLED,
                  "bytes/s this broker sends as leader to the throttled replicas it serves", None, at_least(0)),
        ConfigDef(FOLLOWER_RATE, ConfigType.LONG, UNTHROTTLED,
                  "bytes/s this broker fetches as follower for the throttled replicas it hosts", None, at_least(0)),
    )
}
"""The broker configs Strom changes at run time (the rest of server.properties is static)."""


class _All(frozenset):
    def __repr__(self) -> str:
        return "ALL_PARTITIONS"


ALL_PARTITIONS: frozenset[int] = _All()
"""`throttled_partitions` of a `*` list: every partition (compare with `is`)."""


def validate_broker_overrides(overrides: Mapping[str, object]) -> dict[str, Value]:
    """Parse dynamic broker config overrides; names Strom cannot change at run time are refused."""
    parsed: dict[str, Value] = {}
    for name, raw in overrides.items():
        definition = BROKER_DYNAMIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"Cannot update broker config {name} dynamically; the dynamic broker configs "
                                     f"are {', '.join(sorted(BROKER_DYNAMIC_CONFIGS))}")
        parsed[name] = definition.parse(raw)
    return parsed


def rate(name: str, broker_overrides: Mapping[str, str], default_overrides: Mapping[str, str]) -> int:
    """The effective rate (bytes/s) of `name` on a broker: its own override, else the cluster default, else
    unthrottled. Stored values were validated; an unparsable one counts as unthrottled."""
    raw = broker_overrides.get(name, default_overrides.get(name))
    if raw is None:
        return UNTHROTTLED
    try:
        return int(BROKER_DYNAMIC_CONFIGS[name].parse(raw))
    except InvalidConfigError:
        return UNTHROTTLED


def throttled_partitions(entries: Value, broker_id: int) -> frozenset[int]:
    """Partitions of a topic whose replica on `broker_id` a throttled-replicas list names; ALL_PARTITIONS for `*`."""
    items = entries if isinstance(entries, tuple) else tuple(str(entries).split(","))
    if any(item.strip() == "*" for item in items):
        return ALL_PARTITIONS
    found = set()
    for item in items:
        partition, _, broker = item.strip().partition(":")
        if broker.isdigit() and partition.isdigit() and int(broker) == broker_id:
            found.add(int(partition))
    return frozenset(found)


def format_replicas(replicas: set[tuple[int, int]]) -> str:
    """A throttled-replicas value from (partition, broker) pairs, sorted: "0:1,0:2,1:3"."""
    return ",".join(f"{p}:{b}" for p, b in sorted(replicas))
