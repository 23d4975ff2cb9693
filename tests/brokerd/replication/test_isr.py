"""`IsrManager` against a fake control plane (the metadata layer): one AlterPartition in flight per
partition, conditional on the epochs the leader had; the committed ISR is adopted, a refusal drops the
proposal and re-reads the metadata, an answer arriving after a leadership change is ignored, and one committing
a new leader keeps the proposal counting until the image arrives. Proposals
are batched: those of one loop step go in one request, those made while it is in flight in the next, and a
partition refused in a batch does not fail the others."""

import asyncio

import pytest

from brokerd.metadata.errors import ControlPlaneUnavailableError, MetadataError
from brokerd.metadata.image import PartitionAssignment
from brokerd.metadata.store import IsrProposal
from brokerd.replication.isr import IsrManager
from tests.brokerd.replication.conftest import assignment, build_batch


class Refused(MetadataError):
    kafka_error = "INVALID_UPDATE_VERSION"


class FakeControlPlane:
    """AlterPartition answered when the test releases it: "commit" (partition epoch + 1), "refuse" (every
    partition refused), "fail" (the whole request), or a set of partition indexes to refuse."""

    def __init__(self) -> None:
        self.proposals: list[tuple[int, int, tuple[int, ...]]] = []
        self.requests: list[list[IsrProposal]] = []
        self.refreshes = 0
        self.answer: asyncio.Future | None = None

    async def alter_partitions(self, proposals) -> list[PartitionAssignment | MetadataError]:
        self.requests.append(list(proposals))
        self.proposals += [(p.leader_epoch, p.partition_epoch, p.isr) for p in proposals]
        self.answer = asyncio.get_running_loop().create_future()
        answer = await self.answer
        if answer == "fail":
            raise ControlPlaneUnavailableError("no answer")
        if answer == "moved":  # committed with the reassignment it completed: replica 3 leads, next epoch
            return [assignment(3, p.leader_epoch + 1, isr=p.isr, partition_epoch=p.partition_epoch + 2)
                    for p in proposals]
        refused = {p.partition for p in proposals} if answer == "refuse" else set() if answer == "commit" else answer
        return [Refused("stale partition epoch") if p.partition in refused
                else assignment(1, p.leader_epoch, isr=p.isr, partition_epoch=p.partition_epoch + 1)
                for p in proposals]

    async def refresh(self) -> None:
        self.refreshes += 1


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def leader(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 3, partition_epoch=7), now_ms=0)
    partition.append_as_leader(build_batch())
    return partition


def test_a_committed_shrink_is_adopted_and_one_proposal_is_in_flight_at_a_time(leader):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        assert isr.propose(leader, (1, 2))
        assert not isr.propose(leader, (1,))  # one at a time
        await settle()
        assert control_plane.proposals == [(3, 7, (1, 2))]  # at the epochs the leader had
        assert leader.pending_isr == (1, 2) and leader.maximal_isr == (1, 2, 3)
        control_plane.answer.set_result("commit")
        await settle()
        assert (leader.isr, leader.partition_epoch, leader.pending_isr) == ((1, 2), 8, None)
        await isr.stop()

    asyncio.run(scenario())


def test_a_refused_proposal_is_dropped_and_the_metadata_re_read(leader):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        isr.propose(leader, (1, 2))
        await settle()
        control_plane.answer.set_result("refuse")
        await settle()
        assert (leader.isr, leader.partition_epoch, leader.pending_isr) == ((1, 2, 3), 7, None)
        assert control_plane.refreshes == 1
        assert isr.propose(leader, (1, 2))  # the next ISR check may propose again
        await isr.stop()

    asyncio.run(scenario())


def test_an_answer_after_a_leadership_change_is_not_applied(leader):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        isr.propose(leader, (1, 2))
        await settle()
        leader.make_leader(assignment(1, 4, partition_epoch=9), now_ms=0)  # re-elected meanwhile
        control_plane.answer.set_result("commit")
        await settle()
        assert (leader.isr, leader.partition_epoch) == ((1, 2, 3), 9)
        await isr.stop()

    asyncio.run(scenario())


def test_an_expansion_committed_with_a_new_leader_keeps_the_hw_below_what_the_new_leader_fetched(make_partition):
    """A reassignment completes in the transaction that commits the expansion bringing in its last target, which
    then leads: until the image saying so arrives, the old leader must not move its HW past that replica's
    position over the old ISR alone (records acknowledged there would be missing on the new leader)."""
    async def scenario():
        leader = make_partition(1)
        leader.make_leader(assignment(1, 3, isr=(1, 2), partition_epoch=7), now_ms=0)
        leader.append_as_leader(build_batch())
        caught_up = leader.log_end_offset
        leader.update_follower_fetch(2, caught_up, now_ms=1)
        leader.update_follower_fetch(3, caught_up, now_ms=1)  # replica 3 caught up: the expansion is proposed
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        assert isr.propose(leader, (1, 2, 3))
        await settle()
        control_plane.answer.set_result("moved")
        await settle()
        assert leader.maximal_isr == (1, 2, 3)  # the proposal still counts
        leader.append_as_leader(build_batch())  # produced before the new image arrives
        leader.update_follower_fetch(2, leader.log_end_offset, now_ms=2)
        assert leader.high_watermark == caught_up  # not past what replica 3 (the new leader) was seen to hold
        leader.make_follower(assignment(3, 4, isr=(1, 2, 3), partition_epoch=9))  # the image arrives
        assert leader.pending_isr is None
        await isr.stop()

    asyncio.run(scenario())


def test_nothing_is_proposed_by_a_follower_or_for_an_unchanged_isr(make_partition, leader):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        follower = make_partition(2)
        follower.make_follower(assignment(1, 3))
        assert not isr.propose(follower, (1, 2))
        assert not isr.propose(leader, (1, 2, 3))
        await settle()
        assert control_plane.proposals == []
        await isr.stop()

    asyncio.run(scenario())


@pytest.fixture
def leaders(make_partition):
    """Partitions 0..2 of topic "t", led here at leader epoch 3, partition epoch 7, ISR (1, 2, 3)."""
    partitions = []
    for index in range(3):
        partition = make_partition(1, index=index)
        partition.make_leader(assignment(1, 3, partition_epoch=7), now_ms=0)
        partitions.append(partition)
    return partitions


def test_proposals_of_one_loop_step_share_one_request_and_later_ones_wait_for_the_next(leaders):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        assert isr.propose(leaders[0], (1, 2)) and isr.propose(leaders[1], (1, 3))
        await settle()
        assert [[(p.partition, p.isr) for p in r] for r in control_plane.requests] == [[(0, (1, 2)), (1, (1, 3))]]
        assert isr.propose(leaders[2], (1, 2))  # while the first request is in flight
        await settle()
        assert len(control_plane.requests) == 1
        control_plane.answer.set_result("commit")
        await settle()
        assert [p.partition for p in control_plane.requests[1]] == [2]
        assert [p.isr for p in leaders[:2]] == [(1, 2), (1, 3)]
        control_plane.answer.set_result("commit")
        await settle()
        assert leaders[2].isr == (1, 2) and isr.shrinks == 3
        await isr.stop()

    asyncio.run(scenario())


def test_a_partition_refused_in_a_batch_does_not_fail_the_others(leaders):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        for partition in leaders:
            isr.propose(partition, (1, 2))
        await settle()
        control_plane.answer.set_result({1})
        await settle()
        assert [(p.isr, p.partition_epoch, p.pending_isr) for p in leaders] == [
            ((1, 2), 8, None), ((1, 2, 3), 7, None), ((1, 2), 8, None)]
        assert control_plane.refreshes == 1  # once for the request, not per refused partition
        await isr.stop()

    asyncio.run(scenario())


def test_a_failed_request_drops_every_proposal_in_it(leaders):
    async def scenario():
        control_plane = FakeControlPlane()
        isr = IsrManager(control_plane)
        for partition in leaders:
            isr.propose(partition, (1, 2))
        await settle()
        control_plane.answer.set_result("fail")
        await settle()
        assert [(p.isr, p.pending_isr) for p in leaders] == [((1, 2, 3), None)] * 3
        assert all(isr.propose(p, (1, 2)) for p in leaders)  # the next ISR check proposes again
        await isr.stop()

    asyncio.run(scenario())
