"""`IsrManager` against a fake control plane (the metadata layer): one AlterPartition in flight per
partition, conditional on the epochs the leader had; the committed ISR is adopted, a refusal drops the
proposal and re-reads the metadata, and an answer arriving after a leadership change is ignored."""

import asyncio

import pytest

from brokerd.metadata.errors import MetadataError
from brokerd.metadata.image import PartitionAssignment
from brokerd.replication.isr import IsrManager
from tests.brokerd.replication.conftest import assignment, build_batch


class Refused(MetadataError):
    kafka_error = "INVALID_UPDATE_VERSION"


class FakeControlPlane:
    """AlterPartition answered when the test releases it: commit (partition epoch + 1) or refuse."""

    def __init__(self) -> None:
        self.proposals: list[tuple[int, int, tuple[int, ...]]] = []
        self.refreshes = 0
        self.answer: asyncio.Future | None = None

    async def alter_partition(self, topic, partition, leader_epoch, partition_epoch, isr) -> PartitionAssignment:
        self.proposals.append((leader_epoch, partition_epoch, isr))
        self.answer = asyncio.get_running_loop().create_future()
        if await self.answer == "refuse":
            raise Refused("stale partition epoch")
        return assignment(1, leader_epoch, isr=isr, partition_epoch=partition_epoch + 1)

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
