"""Balance proposals against Kafka's `--generate` (issue 13): a 300-partition RF-3 cluster (10 topics x 30
partitions, sizes 1-1000 MB, seeded) expanded from 3 to 4 brokers, and broker 2 of 4 decommissioned.

For each goal it prints, for Strom's proposal and for the plan Kafka's tool makes (`--generate` onto the
broker list: every topic placed from scratch by the topic-creation algorithm), the partitions whose replica
lists change, the replicas copied, the bytes copied, preferred-leader changes, and the final per-broker spread
(replicas / preferred leaders / GB). Pure computation: `python -m bench.reassignment_plan`.
"""

import os
import random
import time

from controlplane.controller import balance
from controlplane.controller.balance import Replicas
from controlplane.topics.placement import assign_replicas

TOPICS, PARTITIONS, RF = 10, 30, 3
SEED = int(os.environ.get("BENCH_SEED", "13"))


def initial(brokers: list[int], rng: random.Random) -> list[Replicas]:
    placed = []
    for t in range(TOPICS):
        lists = assign_replicas(dict.fromkeys(brokers), PARTITIONS, RF, rng)
        placed += [Replicas(f"topic-{t}", p, tuple(r), rng.randint(1, 1000) * 1_000_000) for p, r in enumerate(lists)]
    return placed


def kafka_generate(placed: list[Replicas], brokers: list[int], rng: random.Random) -> list[Replicas]:
    out = []
    for t in range(TOPICS):
        ours = [p for p in placed if p.topic == f"topic-{t}"]
        lists = assign_replicas(dict.fromkeys(brokers), len(ours), RF, rng)
        out += [Replicas(p.topic, p.partition, tuple(r), p.size) for p, r in zip(ours, lists, strict=True)]
    return out


def describe(name: str, before: list[Replicas], after: list[Replicas], racks: dict, seconds: float) -> None:
    proposal = balance.proposal(before, after, racks)
    leader_changes = sum(1 for old, new in proposal.moves if old.replicas[0] != new.replicas[0])
    spread = "  ".join(f"b{b}: {load.replicas}/{load.leaders}/{load.bytes / 1e9:.1f}"
                       for b, load in proposal.after.items() if load.replicas or b in racks)
    print(f"  {name:<22} {len(proposal.moves):>4} partitions  {proposal.replica_moves:>4} replicas  "
          f"{proposal.bytes_to_move / 1e9:>7.1f} GB  {leader_changes:>4} leader changes  {seconds * 1000:>6.1f} ms")
    print(f"  {'':<22} after (replicas/leaders/GB): {spread}")


def main() -> None:
    rng = random.Random(SEED)
    three = initial([1, 2, 3], rng)
    four = dict.fromkeys([1, 2, 3, 4])
    print(f"{TOPICS * PARTITIONS} partitions, RF {RF}, {sum(p.size for p in three) * RF / 1e9:.0f} GB of replicas")
    print("expand 3 -> 4 brokers (spread onto broker 4):")
    started = time.perf_counter()
    ours = balance.replica_distribution(three, four)
    describe("Strom replica balance", three, ours, four, time.perf_counter() - started)
    started = time.perf_counter()
    ours_disk = balance.disk_distribution(three, four)
    describe("Strom disk balance", three, ours_disk, four, time.perf_counter() - started)
    describe("Kafka --generate", three, kafka_generate(three, [1, 2, 3, 4], random.Random(SEED)), four, 0.0)

    spread_out = ours
    print("decommission broker 2 of 4:")
    remaining = {1: None, 3: None, 4: None}
    started = time.perf_counter()
    decommissioned = balance.decommission(spread_out, four, [2])
    describe("Strom decommission", spread_out, decommissioned, remaining, time.perf_counter() - started)
    describe("Kafka --generate", spread_out, kafka_generate(spread_out, [1, 3, 4], random.Random(SEED)), remaining,
             0.0)


if __name__ == "__main__":
    main()
