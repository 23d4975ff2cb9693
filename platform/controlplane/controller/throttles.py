"""Replication throttles for reassignments, set and cleared as Kafka's `kafka-reassign-partitions` does
(/work/shared/reference/reassignment.md §1.4 step 3, §1.6, §1.7):

- topic `leader.replication.throttled.replicas` gets `partition:broker` for every source replica (any of them
  may lead), `follower.replication.throttled.replicas` for every new destination replica;
- `leader.replication.throttled.rate` and `follower.replication.throttled.rate` (bytes/s) are set on every
  broker among sources and destinations.

Entries already present are kept (so `--additional` widens the throttle); clearing removes the two topic
configs from the given topics and the two rates from every broker that has them. When a partition's
reassignment completes or is cancelled, `release` removes that partition's entries at once, and the rates
too once no topic lists any throttled replica (so a finished reassignment never leaves replication slowed).
"""

from collections.abc import Iterable, Mapping, Sequence

from controlplane.cluster import changelog
from controlplane.cluster.broker_configs import alter_broker_configs
from controlplane.cluster.models import BrokerConfig
from controlplane.topics.models import Partition, Topic
from controlplane.topics.services import alter_configs
from kafkaspec.replication_throttles import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    format_replicas,
)

__all__ = ("Move", "clear_throttles", "release", "set_throttles", "throttled_replicas")

Move = tuple[Sequence[int], Sequence[int]]
"""(source replicas, target replicas) of one partition."""


def throttled_replicas(moves: Mapping[tuple[str, int], Move]) -> dict[str, tuple[set[tuple[int, int]],
                                                                                    set[tuple[int, int]]]]:
    """Per topic, the (partition, broker) pairs to throttle as leader (every source) and as follower (every
    target that is not a source)."""
    by_topic: dict[str, tuple[set[tuple[int, int]], set[tuple[int, int]]]] = {}
    for (topic, partition), (sources, targets) in sorted(moves.items()):
        leader, follower = by_topic.setdefault(topic, (set(), set()))
        leader.update((partition, b) for b in sources)
        follower.update((partition, b) for b in targets if b not in sources)
    return by_topic


def _merged(existing: str | None, added: set[tuple[int, int]]) -> str:
    if existing and existing.strip() == "*":
        return "*"
    pairs = set(added)
    for item in (existing or "").split(","):
        partition, _, broker = item.strip().partition(":")
        if partition.isdecimal() and broker.isdecimal():
            pairs.add((int(partition), int(broker)))
    return format_replicas(pairs)


def set_throttles(moves: Mapping[tuple[str, int], Move], rate: int) -> set[int]:
    """Throttle the moves' replication at `rate` bytes/s; returns the brokers whose rates were set."""
    for topic, (leader, follower) in throttled_replicas(moves).items():
        configs = Topic.objects.get(name=topic).configs
        merged = {LEADER_REPLICAS: _merged(configs.get(LEADER_REPLICAS), leader),
                  FOLLOWER_REPLICAS: _merged(configs.get(FOLLOWER_REPLICAS), follower)}
        alter_configs(topic, {name: value for name, value in merged.items() if value})  # no empty lists
    brokers = {b for sources, targets in moves.values() for b in (*sources, *targets)}
    alter_broker_configs(sorted(brokers), {LEADER_RATE: rate, FOLLOWER_RATE: rate})
    return brokers


def clear_throttles(topics: Iterable[str]) -> tuple[list[str], list[int]]:
    """Remove the throttled-replica lists from `topics` and the rates from every broker; returns
    (topics, brokers) actually changed."""
    cleared_topics = []
    for topic in sorted(set(topics)):
        configs = Topic.objects.filter(name=topic).values_list("configs", flat=True).first() or {}
        if LEADER_REPLICAS in configs or FOLLOWER_REPLICAS in configs:
            alter_configs(topic, delete=[LEADER_REPLICAS, FOLLOWER_REPLICAS])
            cleared_topics.append(topic)
    brokers = sorted(c.broker_id for c in BrokerConfig.objects.all()
                     if LEADER_RATE in c.configs or FOLLOWER_RATE in c.configs)
    if brokers:
        alter_broker_configs(brokers, delete=[LEADER_RATE, FOLLOWER_RATE])
    return cleared_topics, brokers


def release(partition: Partition) -> bool:
    """`partition`'s reassignment ended: drop its entries from its topic's throttled-replica lists (a `*` list
    stays) and, if that left no topic with a list, the rates from every broker. Caller holds
    `metadata.locked_state()` and bumps the metadata version; True if anything changed."""
    configs = dict(Topic.objects.get(pk=partition.topic_id).configs)
    changed = False
    for name in (LEADER_REPLICAS, FOLLOWER_REPLICAS):
        value = configs.get(name)
        if value is None or value.strip() == "*":
            continue
        entries = [e.strip() for e in value.split(",") if e.strip()]
        kept = [e for e in entries if e.split(":")[0] != str(partition.partition)]
        if len(kept) != len(entries):
            changed = True
            if kept:
                configs[name] = ",".join(kept)
            else:
                del configs[name]
    if not changed:
        return False
    Topic.objects.filter(pk=partition.topic_id).update(configs=configs)
    if not any(LEADER_REPLICAS in c or FOLLOWER_REPLICAS in c for c in Topic.objects.values_list("configs", flat=True)):
        for row in BrokerConfig.objects.all():
            rest = {k: v for k, v in row.configs.items() if k not in (LEADER_RATE, FOLLOWER_RATE)}
            if rest != row.configs:
                BrokerConfig.objects.filter(pk=row.pk).update(configs=rest)
                changelog.note_broker_configs()
    return True
