"""Balance proposals: reassignment plans Strom computes itself, moving as little data as the goal requires
(pure functions, no I/O; Cruise Control's goals, /work/shared/reference/reassignment.md §2.2, done greedily).

Input: the partitions (`Replicas`: ordered replicas, first = preferred leader, and the partition's size in
bytes) and the brokers with their racks. Goals:

- `decommission(brokers_to_remove)`: every replica on those brokers moves to the remaining broker with the
  fewest replicas (then bytes) that keeps the partition's racks distinct where possible; the new replica
  takes the removed one's place in the list, so preferred leadership moves with it.
- `replica_distribution` (also "spread onto a new broker"): while the most loaded broker holds more than
  one replica over the least loaded, move its smallest eligible replica there; each move narrows the spread,
  so it ends with every broker within one replica of the others.
- `disk_distribution`: while moving some replica from the fullest broker (bytes) to the emptiest narrows
  their difference, move the largest such one.
- `leader_distribution`: only reorders replica lists (no data moves): partitions preferring an
  over-represented broker get an in-list replica on an under-represented one as first replica.
- `rack_awareness`: a partition with two replicas on one rack while a rack without any of its replicas
  has brokers moves one of them there.
- `replication_factor(topic, rf)`: adds replicas on the least loaded brokers (rack-aware) or drops the last.

Every goal is rack-aware: a move never puts two replicas of a partition on one rack where a free rack exists.
A proposal lists each move with its bytes and per-broker before/after (replicas, leaders, bytes).
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ("BrokerLoad", "Proposal", "Replicas", "decommission", "disk_distribution", "leader_distribution",
           "load", "plan_moves", "proposal", "rack_awareness", "replica_distribution", "replication_factor")


@dataclass(frozen=True)
class Replicas:
    """One partition's placement: `replicas[0]` is the preferred leader; `size` its bytes (one replica)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    size: int = 0


@dataclass(frozen=True)
class BrokerLoad:
    replicas: int
    leaders: int
    bytes: int
    rack: str | None


@dataclass(frozen=True)
class Proposal:
    """The partitions whose replica lists change (`moves`: before, after), bytes to copy (one replica's size per
    replica added), and the load per broker before and after."""

    moves: list[tuple[Replicas, Replicas]]
    bytes_to_move: int
    before: dict[int, BrokerLoad]
    after: dict[int, BrokerLoad]

    @property
    def replica_moves(self) -> int:
        return sum(len(set(new.replicas) - set(old.replicas)) for old, new in self.moves)


def load(partitions: Iterable[Replicas], racks: Mapping[int, str | None]) -> dict[int, BrokerLoad]:
    """Replicas, preferred leaderships and bytes per broker (every broker of `racks`, also empty ones)."""
    replicas, leaders, size = Counter(), Counter(), Counter()
    for p in partitions:
        for b in p.replicas:
            replicas[b] += 1
            size[b] += p.size
        if p.replicas:
            leaders[p.replicas[0]] += 1
    ids = set(racks) | set(replicas)
    return {b: BrokerLoad(replicas[b], leaders[b], size[b], racks.get(b)) for b in sorted(ids)}


def plan_moves(before: Sequence[Replicas], after: Sequence[Replicas]) -> list[tuple[Replicas, Replicas]]:
    return [(old, new) for old, new in zip(before, after, strict=True) if old.replicas != new.replicas]


def proposal(before: Sequence[Replicas], after: Sequence[Replicas], racks: Mapping[int, str | None]) -> Proposal:
    moves = plan_moves(before, after)
    copied = sum(old.size * len(set(new.replicas) - set(old.replicas)) for old, new in moves)
    return Proposal(moves, copied, load(before, racks), load(after, racks))


class _Cluster:
    """Mutable placement while a goal works: replica lists and per-broker counts kept in step."""

    def __init__(self, partitions: Sequence[Replicas], racks: Mapping[int, str | None]):
        self.partitions = [list(p.replicas) for p in partitions]
        self.sizes = [p.size for p in partitions]
        self.racks = {b: (r or f"<broker {b}>") for b, r in racks.items()}
        self.count: Counter[int] = Counter({b: 0 for b in racks})
        self.bytes: Counter[int] = Counter({b: 0 for b in racks})
        self.on: dict[int, set[int]] = {b: set() for b in racks}
        for i, replicas in enumerate(self.partitions):
            for b in replicas:
                self.racks.setdefault(b, f"<broker {b}>")  # a replica on a broker not in `racks` (one down)
                self._add(i, b)

    def _add(self, i: int, b: int) -> None:
        self.count[b] += 1
        self.bytes[b] += self.sizes[i]
        self.on.setdefault(b, set()).add(i)

    def _remove(self, i: int, b: int) -> None:
        self.count[b] -= 1
        self.bytes[b] -= self.sizes[i]
        self.on[b].discard(i)

    def rack_ok(self, i: int, source: int | None, dest: int, brokers: Iterable[int]) -> bool:
        """`dest` may replace `source` in partition i: not a replica yet, and no rack doubled where avoidable."""
        replicas = self.partitions[i]
        if dest in replicas:
            return False
        used = Counter(self.racks[b] for b in replicas if b != source)
        if used[self.racks[dest]] == 0:
            return True
        free = {self.racks[b] for b in brokers} - set(used)
        return not free

    def move(self, i: int, source: int, dest: int) -> None:
        replicas = self.partitions[i]
        replicas[replicas.index(source)] = dest
        self._remove(i, source)
        self._add(i, dest)

    def result(self, partitions: Sequence[Replicas]) -> list[Replicas]:
        return [Replicas(p.topic, p.partition, tuple(r), p.size) for p, r in zip(partitions, self.partitions,
                                                                                strict=True)]


def decommission(partitions: Sequence[Replicas], racks: Mapping[int, str | None], removed: Iterable[int]
                 ) -> list[Replicas]:
    """Move every replica off `removed`, largest partitions first, each to the eligible remaining broker with
    the fewest replicas, then the fewest bytes. ValueError if a partition cannot keep its replication factor."""
    removed = set(removed)
    c = _Cluster(partitions, racks)
    remaining = [b for b in racks if b not in removed]
    for b in sorted(removed):
        for i in sorted(c.on.get(b, ()), key=lambda i: -c.sizes[i]):
            candidates = [d for d in remaining if c.rack_ok(i, b, d, remaining)]
            if not candidates:
                p = partitions[i]
                raise ValueError(f"{p.topic}-{p.partition} cannot keep {len(p.replicas)} replicas on brokers "
                                 f"{sorted(remaining)}")
            c.move(i, b, min(candidates, key=lambda d: (c.count[d], c.bytes[d], d)))
    return c.result(partitions)


def replica_distribution(partitions: Sequence[Replicas], racks: Mapping[int, str | None]) -> list[Replicas]:
    """Even replica counts (every broker within one of the others) by moving the smallest replicas from the
    most to the least loaded broker; a new broker in `racks` is thereby filled."""
    c = _Cluster(partitions, racks)
    brokers = list(racks)
    while True:
        by_count = sorted(brokers, key=lambda b: (c.count[b], c.bytes[b], b))
        moved = False
        for source in reversed(by_count):
            for dest in by_count:
                if c.count[source] - c.count[dest] <= 1:
                    break
                eligible = [i for i in c.on[source] if c.rack_ok(i, source, dest, brokers)]
                if eligible:
                    c.move(min(eligible, key=lambda i: (c.sizes[i], i)), source, dest)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return c.result(partitions)


def disk_distribution(partitions: Sequence[Replicas], racks: Mapping[int, str | None],
                      max_moves: int = 10_000) -> list[Replicas]:
    """Narrow the bytes per broker: repeatedly move, from the fullest broker to the emptiest one that can take
    it, the largest replica smaller than half their difference (each move strictly narrows that pair)."""
    c = _Cluster(partitions, racks)
    brokers = list(racks)
    for _ in range(max_moves):
        by_bytes = sorted(brokers, key=lambda b: (c.bytes[b], b))
        best = None
        for source in reversed(by_bytes):
            for dest in by_bytes:
                gap = c.bytes[source] - c.bytes[dest]
                fits = [i for i in c.on[source] if 0 < c.sizes[i] * 2 < gap and c.rack_ok(i, source, dest, brokers)]
                if fits:
                    best = (max(fits, key=lambda i: (c.sizes[i], -i)), source, dest)
                    break
            if best:
                break
        if best is None:
            break
        c.move(*best)
    return c.result(partitions)


def leader_distribution(partitions: Sequence[Replicas], racks: Mapping[int, str | None]) -> list[Replicas]:
    """Even preferred leaderships without moving data: reorder lists so each broker is first in at most
    ceil(partitions / brokers) of them, choosing replicas that are first the least often."""
    firsts = Counter({b: 0 for b in racks})
    firsts.update(p.replicas[0] for p in partitions if p.replicas)
    cap = -(-len(partitions) // max(len(racks), 1))
    out = []
    for p in partitions:
        replicas = list(p.replicas)
        if replicas and firsts[replicas[0]] > cap:
            new = min(replicas, key=lambda b: (firsts[b], b))
            if firsts[new] + 1 <= cap:
                firsts[replicas[0]] -= 1
                firsts[new] += 1
                replicas.remove(new)
                replicas.insert(0, new)
        out.append(Replicas(p.topic, p.partition, tuple(replicas), p.size))
    return out


def rack_awareness(partitions: Sequence[Replicas], racks: Mapping[int, str | None]) -> list[Replicas]:
    """Fix rack violations: a replica sharing a rack with another of its partition moves to the least loaded
    broker of a rack the partition does not use yet."""
    c = _Cluster(partitions, racks)
    brokers = list(racks)
    for i, replicas in enumerate(c.partitions):
        for b in reversed(list(replicas)):  # move followers rather than the preferred leader
            if c.racks[b] not in {c.racks[r] for r in replicas if r != b}:
                continue
            used = {c.racks[r] for r in replicas}
            dests = [d for d in brokers if c.racks[d] not in used]
            if dests:
                c.move(i, b, min(dests, key=lambda d: (c.count[d], c.bytes[d], d)))
    return c.result(partitions)


def replication_factor(partitions: Sequence[Replicas], racks: Mapping[int, str | None], topic: str, rf: int
                       ) -> list[Replicas]:
    """`topic`'s partitions with `rf` replicas: new ones on the least loaded eligible brokers, surplus ones
    dropped from the end of the list (the preferred leader stays). ValueError if rf exceeds the brokers."""
    if not 1 <= rf <= len(racks):
        raise ValueError(f"Replication factor {rf} is not between 1 and the {len(racks)} brokers")
    c = _Cluster(partitions, racks)
    brokers = list(racks)
    for i, p in enumerate(partitions):
        if p.topic != topic:
            continue
        while len(c.partitions[i]) > rf:
            c._remove(i, c.partitions[i].pop())
        while len(c.partitions[i]) < rf:
            candidates = [d for d in brokers if c.rack_ok(i, None, d, brokers)]
            dest = min(candidates, key=lambda d: (c.count[d], c.bytes[d], d))
            c.partitions[i].append(dest)
            c._add(i, dest)
    return c.result(partitions)
