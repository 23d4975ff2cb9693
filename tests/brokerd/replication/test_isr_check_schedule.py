"""The ISR check visits only the led partitions due by now (`ReplicaManager.maybe_shrink_isr` over
`isr_schedule.IsrCheckSchedule`) yet proposes exactly what a pass over every partition at every check proposes
(the oracle: the check as it was, run on a twin replica manager fed the same steps on the same clock): followers
catching up by fetch or by fetch session, appends, new leaderships, committed and refused proposals, expansions,
fencing and unfencing. And the schedule itself against a dict."""

import random

import pytest

from brokerd.clock import ManualClock
from brokerd.metadata.image import ClusterImage, PartitionAssignment
from brokerd.replication.config import ReplicationConfig
from brokerd.replication.isr_schedule import IsrCheckSchedule
from brokerd.replication.partition import Partition
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager
from brokerd.types import TopicPartition
from tests.brokerd.groups.stack import ScriptedMetadata
from tests.brokerd.replication.conftest import build_batch

LAG_MS = 1_000
PARTITIONS = 6
REPLICAS = (1, 2, 3)


class Proposals:
    """`IsrManager.propose` without the control plane: the proposal is pending until the test settles it."""

    def __init__(self) -> None:
        self.made: list[tuple[int, tuple[int, ...]]] = []

    def propose(self, partition: Partition, isr: tuple[int, ...]) -> bool:
        if partition.pending_isr is not None or not partition.is_leader or isr == partition.isr:
            return False
        partition.pending_isr = isr
        self.made.append((partition.index, isr))
        return True


def full_pass(replicas: ReplicaManager) -> None:
    """The oracle: the ISR check as it was before it was scheduled, over every replica."""
    now = replicas._clock.monotonic_ms()
    for partition in replicas.partitions():
        if not partition.is_leader or partition.pending_isr is not None:
            continue
        lagging = partition.out_of_sync_replicas(now, LAG_MS, replicas._fenced, replicas._caught_up_in_session)
        if lagging:
            replicas.isr.propose(partition, tuple(r for r in partition.isr if r not in lagging))


def scheduled_check(replicas: ReplicaManager) -> None:
    while replicas.maybe_shrink_isr(limit=2):  # small slices: a check spread over several loop steps
        pass


class Twin:
    """A replica manager of broker 1 over real logs, leading or following `PARTITIONS` partitions of "t"."""

    def __init__(self, directory, check) -> None:
        self.clock = ManualClock()
        self.logs = LogManager([directory], {}, self.clock)
        self.logs.startup()
        self.replicas = ReplicaManager(self.logs, ScriptedMetadata(ClusterImage("c", 1, (), {})), 1,
                                       config=ReplicationConfig(replica_lag_time_max_ms=LAG_MS), clock=self.clock)
        self.replicas.isr = self.proposals = Proposals()  # type: ignore[assignment]
        self.check = check
        self.epochs = dict.fromkeys(range(PARTITIONS), 0)
        for index in range(PARTITIONS):
            self.replicas._partitions[TopicPartition("t", index)] = Partition(
                "t", index, 1, self.logs.get_or_create_log("t", index), self.replicas)
            self.lead(index)

    def partition(self, index: int) -> Partition:
        return self.replicas._partitions[TopicPartition("t", index)]

    def lead(self, index: int, isr: tuple[int, ...] = REPLICAS) -> None:
        self.epochs[index] += 1
        epoch = self.epochs[index]
        self.partition(index).make_leader(PartitionAssignment(index, 1, epoch, REPLICAS, isr, epoch),
                                          self.clock.monotonic_ms())

    def follow(self, index: int) -> None:
        self.epochs[index] += 1
        epoch = self.epochs[index]
        self.partition(index).make_follower(PartitionAssignment(index, 2, epoch, REPLICAS, REPLICAS, epoch))

    def step(self, action: str, *args) -> None:
        replicas, clock = self.replicas, self.clock
        if action == "advance":
            clock.advance_ms(args[0])
        elif action == "append" and self.partition(args[0]).is_leader:
            self.partition(args[0]).append_as_leader(build_batch())
        elif action == "fetch" and self.partition(args[0]).is_leader:  # (index, replica, behind by)
            partition = self.partition(args[0])
            replicas.record_follower_fetch(partition, args[1], max(0, partition.log_end_offset - args[2]))
        elif action == "session":  # replica args[0] holds every partition in a session, cached at the log end
            session = replicas.fetch_sessions.create(args[0])
            for index in range(PARTITIONS):
                partition = self.partition(index)
                session.update([("t", [_Position(index, partition.log_end_offset, partition.leader_epoch)])], ())
        elif action == "session fetch" and replicas.fetch_sessions._by_replica.get(args[0]) is not None:
            replicas.record_session_fetch(replicas.fetch_sessions._by_replica[args[0]])
        elif action == "fence":
            replicas._fenced = frozenset(args[0])  # as an image applied (`_apply_topics`) sets it
        elif action == "settle" and self.partition(args[0]).pending_isr is not None:  # as `IsrManager._settle`
            partition = self.partition(args[0])
            isr, partition.pending_isr = partition.pending_isr, None
            if args[1]:  # committed
                partition.apply_isr(PartitionAssignment(args[0], 1, partition.leader_epoch, REPLICAS, isr,
                                                        partition.partition_epoch + 1))
        elif action == "expand" and self.partition(args[0]).is_leader:  # a committed expansion to every replica
            partition = self.partition(args[0])
            partition.apply_isr(PartitionAssignment(args[0], 1, partition.leader_epoch, REPLICAS, REPLICAS,
                                                    partition.partition_epoch + 1))
        elif action == "lead":
            self.lead(args[0], args[1])
        elif action == "follow":
            self.follow(args[0])
        elif action == "check":  # checks are ISR_CHECK_INTERVAL_MS apart: the clock moves between two
            clock.advance_ms(1)
            self.check(replicas)

    def state(self) -> list:
        return [(p.is_leader, p.isr, p.pending_isr,
                 {r: f.last_caught_up_ms for r, f in sorted(p.followers.items())}) for p in self.replicas.partitions()]


class _Position:
    def __init__(self, partition: int, fetch_offset: int, epoch: int) -> None:
        self.partition, self.fetch_offset, self.current_leader_epoch = partition, fetch_offset, epoch
        self.partition_max_bytes, self.last_fetched_epoch = 1 << 20, -1


def run(tmp_path, steps) -> tuple[Twin, Twin]:
    scheduled, oracle = Twin(tmp_path / "scheduled", scheduled_check), Twin(tmp_path / "oracle", full_pass)
    try:
        for number, step in enumerate(steps):
            for twin in (scheduled, oracle):
                twin.step(*step)
            # the same proposals, in any order within a check (the oracle visits by partition, the check by due time)
            assert sorted(scheduled.proposals.made) == sorted(oracle.proposals.made), f"after step {number} {step}"
            assert scheduled.state() == oracle.state(), f"after step {number} {step}"
    finally:
        scheduled.logs.shutdown()
        oracle.logs.shutdown()
    return scheduled, oracle


SCENARIOS = {
    "a silent follower is proposed out one ms past the lag": (
        [("advance", LAG_MS), ("check",), ("advance", 1), ("check",)],
        [(i, (1,)) for i in range(PARTITIONS)]),
    "a follower fetching at the log end stays in": (
        [("append", 0), *[step for _ in range(5) for step in (("advance", 400), ("fetch", 0, 2, 0),
                                                              ("fetch", 0, 3, 0), ("check",))]],
        [(i, (1,)) for i in range(1, PARTITIONS)]),
    "a quiet follower caught up in its session stays in": (
        [("session", 2), ("session", 3), *[step for _ in range(5) for step in (
            ("advance", 400), ("session fetch", 2), ("session fetch", 3), ("check",))]],
        []),
    "a fenced follower is proposed out at the next check": (
        [("advance", 10), ("fence", {3}), ("check",)],
        [(i, (1, 2)) for i in range(PARTITIONS)]),
    "a refused proposal is made again at the next check": (
        [("fence", {3}), ("check",), ("settle", 0, False), ("advance", 1), ("check",)],
        [*[(i, (1, 2)) for i in range(PARTITIONS)], (0, (1, 2))]),
    "an expansion brings in a follower silent for long: out again at once": (
        [("fence", {3}), ("check",), ("settle", 0, True), ("fence", ()), ("advance", 5 * LAG_MS),
         ("fetch", 0, 2, 0), ("expand", 0), ("check",)],
        [*[(i, (1, 2)) for i in range(PARTITIONS)], (0, (1, 2))]),  # the others' proposals are still pending
    "a new leadership restarts the followers' clocks": (
        [("advance", LAG_MS), ("lead", 0, REPLICAS), ("advance", 1), ("check",)],
        [(i, (1,)) for i in range(1, PARTITIONS)]),
}


@pytest.mark.parametrize("steps, proposed", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_the_scheduled_check_proposes_what_a_full_pass_proposes(tmp_path, steps, proposed):
    scheduled, _ = run(tmp_path, steps)
    assert sorted(scheduled.proposals.made) == sorted(proposed)


def random_steps(seed: int, count: int) -> list[tuple]:
    rng = random.Random(seed)
    steps: list[tuple] = []
    for _ in range(count):
        index = rng.randrange(PARTITIONS)
        steps.append(rng.choice([
            ("advance", rng.choice([1, 50, 250, LAG_MS // 2, LAG_MS])),
            ("check",), ("check",), ("append", index), ("fetch", index, rng.choice((2, 3)), rng.choice((0, 0, 1))),
            ("session", rng.choice((2, 3))), ("session fetch", rng.choice((2, 3))),
            ("fence", rng.choice([(), (), (2,), (3,), (2, 3)])), ("settle", index, rng.random() < 0.5),
            ("expand", index), ("lead", index, rng.choice([REPLICAS, (1, 2), (1,)])), ("follow", index),
        ]))
    return steps


@pytest.mark.parametrize("seed", range(12))
def test_the_scheduled_check_matches_the_full_pass_on_random_steps(tmp_path, seed):
    scheduled, _ = run(tmp_path, random_steps(seed, 400))
    assert scheduled.proposals.made  # the walk did exercise shrinks


def test_the_schedule_pops_what_is_due_earliest_first_as_a_dict_would():
    rng = random.Random(7)
    schedule, oracle = IsrCheckSchedule(), {}
    now = 0
    for _ in range(5_000):
        key = TopicPartition("t", rng.randrange(50))
        action = rng.random()
        if action < 0.4:
            due = now + rng.randrange(-10, 100)
            schedule.schedule(key, due)
            oracle[key] = due
        elif action < 0.7:
            due = now + rng.randrange(-10, 100)
            schedule.schedule_by(key, due)
            oracle[key] = min(due, oracle.get(key, due))
        else:
            now += rng.randrange(0, 20)
            limit = rng.randrange(1, 10)
            expected = sorted((due, k) for k, due in oracle.items() if due <= now)[:limit]
            assert schedule.pop_due(now, limit) == [k for _, k in expected]
            for _, k in expected:
                del oracle[k]
        assert len(schedule) == len(oracle)
        assert schedule.next_due_ms() == min(oracle.values(), default=None)


def test_an_isr_change_marks_the_partition_in_the_followers_sessions(tmp_path):
    """A follower that left the ISR is no longer quiet (its fetches must count for its way back in): its session
    looks at the partition at once, not at the next sweep."""
    twin = Twin(tmp_path, scheduled_check)
    try:
        twin.step("session", 3)
        session = twin.replicas.fetch_sessions._by_replica[3]
        session.changed.clear()
        partition = twin.partition(0)
        partition.apply_isr(PartitionAssignment(0, 1, partition.leader_epoch, REPLICAS, (1, 2),
                                                partition.partition_epoch + 1))
        assert session.changed == {TopicPartition("t", 0)}
    finally:
        twin.logs.shutdown()
