"""Replica placement for new partitions: Kafka's rack-aware round-robin (`AdminUtils.assignReplicasToBrokers`).

Pure functions, no I/O. Brokers are arranged in a rack-alternated list (rack-a's first broker, rack-b's
first, …, rack-a's second, …). Partition p's first replica (its preferred leader) is the broker at
`(p + start_index) % n` of that list, so preferred leaders go round-robin and are balanced within one.
Followers are taken at a shift from the first replica that grows by one every n partitions, so replica
sets vary; with racks, a follower is skipped while its rack already holds a replica of the partition and some
rack does not (Kafka's rule; continued beyond one replica per rack: while some rack with a free broker
holds fewer). Hence RF distinct brokers per partition, spanning min(RF, number of racks) racks, and with
racks of equal size at most ceil(RF / racks) replicas per rack. `start_index` and the initial shift are
random (seeded by the caller's `random.Random`) so that many small topics do not all lead on one broker.
"""

import random
from collections.abc import Mapping

__all__ = ("PlacementError", "assign_replicas", "rack_alternated")


class PlacementError(ValueError):
    """The replication factor cannot be met (wire: INVALID_REPLICATION_FACTOR)."""


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Broker ids taking one from each rack in turn (racks and the brokers in a rack in sorted order)."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    ordered = [by_rack[rack] for rack in sorted(by_rack)]
    return [brokers[i] for i in range(max(map(len, ordered), default=0)) for brokers in ordered if i < len(brokers)]


def _replica_index(first: int, shift: int, k: int, n: int) -> int:
    return (first + 1 + (shift + k) % (n - 1)) % n


def assign_replicas(brokers: Mapping[int, str | None], partitions: int, replication_factor: int,
                    rng: random.Random | None = None, start_partition: int = 0,
                    fixed_start_index: int = -1) -> list[list[int]]:
    """Replica lists (first = preferred leader) for partitions start_partition … start_partition+partitions-1.

    `brokers` maps each eligible broker id to its rack (None or "" for none). Racks are used when any broker
    has one; brokers without a rack then count as one rack of their own (""), unlike Kafka's ZooKeeper-era
    tool, which refused mixed clusters.
    """
    if replication_factor <= 0:
        raise PlacementError("Replication factor must be larger than 0.")
    if partitions <= 0:
        raise PlacementError("Number of partitions must be larger than 0.")
    if replication_factor > len(brokers):
        raise PlacementError(f"Unable to replicate the partition {replication_factor} time(s): The target "
                             f"replication factor of {replication_factor} cannot be reached because only "
                             f"{len(brokers)} broker(s) are registered.")
    rng = rng or random.Random()
    rack_aware = any(brokers.values())
    racks = {b: (r or "") if rack_aware else str(b) for b, r in brokers.items()}
    arranged = rack_alternated(racks) if rack_aware else sorted(brokers)
    n = len(arranged)
    rack_sizes: dict[str, int] = {}
    for rack in racks.values():
        rack_sizes[rack] = rack_sizes.get(rack, 0) + 1
    num_racks = len(rack_sizes)
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    result = []
    for p in range(start_partition, start_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        per_rack = dict.fromkeys(rack_sizes, 0)
        per_rack[racks[leader]] = 1
        k = 0
        while len(replicas) < replication_factor:
            broker = arranged[_replica_index(first, shift * (num_racks if rack_aware else 1), k, n)]
            k += 1
            if broker in replicas:
                continue
            # Kafka skips a broker whose rack already holds a replica while some rack holds none; generalised
            # here to "while some rack with a free broker holds fewer", so racks also fill evenly beyond RF =
            # number of racks (Kafka's rule and this one agree up to there).
            open_racks = [r for r, size in rack_sizes.items() if per_rack[r] < size]
            if per_rack[racks[broker]] == min(per_rack[r] for r in open_racks):
                replicas.append(broker)
                per_rack[racks[broker]] += 1
        result.append(replicas)
    return result
