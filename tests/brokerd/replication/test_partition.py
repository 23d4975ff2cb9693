"""`Partition` as leader and follower over a real log: the high watermark is the minimum log end offset over
the (maximal) ISR and never moves back, consumers never see past it, truncation to a new leader's epoch
boundary, the ISR shrink/expand candidates the replica manager proposes, and the checkpointed high watermark
a restarted replica starts from."""

import pytest

from brokerd.clock import ManualClock
from brokerd.replication.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from brokerd.replication.partition import Partition
from brokerd.storage import LogManager, read_bytes
from brokerd.storage.errors import OffsetOutOfRangeError
from tests.brokerd.replication.conftest import TIMESTAMP_MS, assignment, build_batch

LAG_MS = 30_000


@pytest.fixture
def leader(make_partition):
    """Broker 1 leading t-0 at epoch 0, replicas and ISR [1, 2, 3], with three one-record batches (LEO 3)."""
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0), now_ms=0)
    for _ in range(3):
        partition.append_as_leader(build_batch())
    return partition


#
# High watermark
#

def test_high_watermark_is_the_minimum_log_end_offset_over_the_isr(leader, listener):
    assert leader.high_watermark == 0  # no follower has fetched in this epoch yet
    leader.update_follower_fetch(2, 3, now_ms=10)
    assert leader.high_watermark == 0  # follower 3 still holds it
    leader.update_follower_fetch(3, 1, now_ms=10)
    assert leader.high_watermark == 1
    leader.update_follower_fetch(3, 3, now_ms=20)
    assert leader.high_watermark == 3
    assert listener.high_watermarks == [1, 3]


def test_high_watermark_never_moves_back(leader):
    leader.update_follower_fetch(2, 3, now_ms=10)
    leader.update_follower_fetch(3, 3, now_ms=10)
    leader.update_follower_fetch(3, 1, now_ms=20)  # a follower that truncated after a restart
    assert leader.high_watermark == 3


def test_replicas_outside_the_isr_do_not_hold_the_high_watermark(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0, isr=(1, 2)), now_ms=0)
    partition.append_as_leader(build_batch(2))
    partition.update_follower_fetch(2, 2, now_ms=10)
    assert partition.high_watermark == 2  # replica 3 is out of the ISR and has fetched nothing


def test_a_sole_isr_member_moves_the_high_watermark_on_append(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0, isr=(1,)), now_ms=0)
    partition.append_as_leader(build_batch(4))
    assert partition.high_watermark == 4


def test_pending_expansion_counts_at_once_and_pending_shrink_still_counts_the_old_member(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0, isr=(1, 2)), now_ms=0)
    partition.append_as_leader(build_batch(5))
    partition.update_follower_fetch(2, 5, now_ms=1)
    partition.update_follower_fetch(3, 4, now_ms=1)
    assert partition.high_watermark == 5
    partition.pending_isr = (1, 2, 3)  # proposed: 3 joins; the HW must hold what 3 has not got
    partition.append_as_leader(build_batch())
    partition.update_follower_fetch(2, 6, now_ms=2)
    assert partition.high_watermark == 5
    partition.update_follower_fetch(3, 6, now_ms=2)
    assert partition.high_watermark == 6
    partition.apply_isr(assignment(1, 0, isr=(1, 2, 3), partition_epoch=1))
    partition.pending_isr = (1, 2)  # proposed: 3 leaves; until committed it still holds the HW
    partition.append_as_leader(build_batch())
    partition.update_follower_fetch(2, 7, now_ms=3)
    assert partition.high_watermark == 6


def test_consumers_never_see_records_above_the_high_watermark(leader):
    leader.update_follower_fetch(2, 2, now_ms=10)
    leader.update_follower_fetch(3, 2, now_ms=10)
    assert leader.high_watermark == 2
    region = leader.read(0, 1 << 20)
    assert region is not None and len(read_bytes(region)) == 2 * len(build_batch())  # offsets 0 and 1 only
    assert leader.read(2, 1 << 20) is None  # at the HW: nothing yet (a long poll would wait)
    assert leader.read(2, 1 << 20, up_to_log_end=True) is not None  # followers read to the log end
    assert leader.offset_for_timestamp(TIMESTAMP_MS) == (0, TIMESTAMP_MS)
    with pytest.raises(OffsetOutOfRangeError):
        leader.read(4, 1 << 20)
    with pytest.raises(OffsetOutOfRangeError):
        leader.delete_records_before(3)  # above the HW


def test_records_above_the_high_watermark_are_not_found_by_timestamp(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0), now_ms=0)
    partition.append_as_leader(build_batch())
    assert partition.offset_for_timestamp(TIMESTAMP_MS) is None


#
# Leader appends
#

def test_acks_all_with_too_small_an_isr_is_refused_before_appending(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0, isr=(1,)), now_ms=0)
    with pytest.raises(NotEnoughReplicasError):
        partition.append_as_leader(build_batch(), required_acks=-1, min_insync_replicas=2)
    assert partition.log_end_offset == 0
    assert partition.append_as_leader(build_batch(), required_acks=1, min_insync_replicas=2).base_offset == 0


def test_an_idempotent_retry_returns_the_original_offsets(leader):
    first = leader.append_as_leader(build_batch(2, producer_id=7, producer_epoch=0, base_sequence=0))
    retry = leader.append_as_leader(build_batch(2, producer_id=7, producer_epoch=0, base_sequence=0))
    assert (retry.base_offset, retry.last_offset) == (first.base_offset, first.last_offset) == (3, 4)
    assert leader.log_end_offset == 5


def test_only_the_leader_appends_as_leader_and_only_a_follower_as_follower(make_partition, leader):
    follower = make_partition(2)
    follower.make_follower(assignment(1, 0))
    with pytest.raises(NotLeaderOrFollowerError):
        follower.append_as_leader(build_batch())
    with pytest.raises(NotLeaderOrFollowerError):
        leader.append_as_follower(memoryview(build_batch()), 0, 0)


def test_leader_epoch_of_requests_is_checked(leader):
    leader.make_leader(assignment(1, 2), now_ms=0)
    leader.check_leader_epoch(-1)
    leader.check_leader_epoch(2)
    with pytest.raises(FencedLeaderEpochError):
        leader.check_leader_epoch(1)
    with pytest.raises(UnknownLeaderEpochError):
        leader.check_leader_epoch(3)


#
# Follower
#

def test_follower_appends_verbatim_and_learns_the_high_watermark_up_to_its_log_end(make_partition, leader):
    follower = make_partition(2)
    follower.make_follower(assignment(1, 0))
    fetched = read_bytes(leader.read(0, 1 << 20, up_to_log_end=True))
    follower.append_as_follower(memoryview(fetched[: 2 * len(build_batch())]), leader_high_watermark=3,
                                leader_log_start_offset=0)
    assert (follower.log_end_offset, follower.high_watermark) == (2, 2)  # never above its own log end
    follower.append_as_follower(memoryview(fetched[2 * len(build_batch()):]), 3, 0)
    assert (follower.log_end_offset, follower.high_watermark) == (3, 3)
    assert read_bytes(follower.read(0, 1 << 20)) == fetched  # byte-identical, offsets and epochs included


def test_new_leadership_starts_its_epoch_at_the_log_end(leader):
    assert leader.make_leader(assignment(1, 0), now_ms=0) is False  # same epoch: nothing new
    assert leader.make_leader(assignment(1, 4), now_ms=0) is True
    assert leader.log.leader_epoch_cache.entries() == [(0, 0), (4, 3)]
    assert leader.end_offset_for_epoch(0) == (0, 3)  # where epoch 0 ended here: OffsetForLeaderEpoch
    assert leader.end_offset_for_epoch(2) == (0, 3)  # an epoch this replica never saw: the one before it
    assert leader.end_offset_for_epoch(4) == (4, 3)  # the current epoch ends at the log end


def test_truncation_to_a_new_leaders_epoch_boundary(leader):
    """The old leader had appended offsets 3 and 4 in epoch 0 that no follower got; the new leader's epoch
    0 ended at 3, so the old leader, now a follower, drops them, with their producer state."""
    leader.update_follower_fetch(2, 3, now_ms=1)
    leader.update_follower_fetch(3, 3, now_ms=1)
    leader.append_as_leader(build_batch(2, producer_id=9, producer_epoch=0, base_sequence=0))
    assert (leader.log_end_offset, leader.high_watermark) == (5, 3)
    leader.make_follower(assignment(2, 1))
    leader.truncate_to(3)
    assert (leader.log_end_offset, leader.high_watermark) == (3, 3)
    assert leader.end_offset_for_epoch(0) == (0, 3)
    leader.make_leader(assignment(1, 2), now_ms=2)  # leads again later: the retried batch is new, not a duplicate
    assert leader.append_as_leader(build_batch(2, producer_id=9, producer_epoch=0, base_sequence=0)).base_offset == 3


def test_truncation_below_the_high_watermark_lowers_it(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0, isr=(1,)), now_ms=0)
    for _ in range(4):
        partition.append_as_leader(build_batch())
    partition.make_follower(assignment(2, 1))
    partition.truncate_to(1)  # only an unclean election gets here: the HW follows the log down
    assert (partition.log_end_offset, partition.high_watermark) == (1, 1)
    partition.truncate_to(5)  # past the end: nothing to do
    assert partition.log_end_offset == 1


def test_restart_at_the_leaders_log_start(make_partition):
    partition = make_partition(2)
    partition.make_follower(assignment(1, 0))
    partition.truncate_fully_and_start_at(42)
    assert (partition.log_start_offset, partition.log_end_offset, partition.high_watermark) == (42, 42, 42)


#
# ISR shrink and expand candidates
#

def test_followers_not_caught_up_for_the_lag_time_or_fenced_are_out_of_sync(leader):
    leader.update_follower_fetch(2, 3, now_ms=1_000)  # at the log end: caught up at 1 s
    leader.update_follower_fetch(3, 1, now_ms=1_000)  # behind since it became leader at 0
    assert leader.out_of_sync_replicas(LAG_MS, LAG_MS) == []
    assert leader.out_of_sync_replicas(LAG_MS + 1, LAG_MS) == [3]
    assert leader.out_of_sync_replicas(LAG_MS + 1_001, LAG_MS) == [2, 3]
    assert leader.out_of_sync_replicas(10, LAG_MS, fenced=[2]) == [2]  # the controller fenced its broker


def test_a_follower_caught_up_as_another_record_shows_stays_in_sync(leader):
    """A fetch session does not record a quiet partition fetch by fetch: before declaring a follower lagging,
    the leader asks when it was last caught up there."""
    leader.update_follower_fetch(2, 3, now_ms=1_000)
    leader.update_follower_fetch(3, 3, now_ms=1_000)
    sessions = {2: 50_000, 3: -1}  # 2's session fetched at 50 s with the partition at the log end; 3 has none
    asked = []

    def caught_up_elsewhere(replica, partition):
        asked.append(replica)
        assert partition is leader
        return sessions[replica]

    assert leader.out_of_sync_replicas(LAG_MS, LAG_MS, caught_up_elsewhere=caught_up_elsewhere) == []
    assert asked == []  # not asked while the follower's own record is recent enough
    assert leader.out_of_sync_replicas(50_000 + LAG_MS, LAG_MS, caught_up_elsewhere=caught_up_elsewhere) == [3]
    assert leader.out_of_sync_replicas(50_001 + LAG_MS, LAG_MS, caught_up_elsewhere=caught_up_elsewhere) == [2, 3]


def test_a_follower_that_keeps_fetching_what_was_the_log_end_stays_in_sync(leader):
    """Kafka's rule: caught up at a fetch if it reached the leader's log end as of its previous fetch, so a
    follower under steady load is never out of sync although it is never exactly at the log end."""
    leader.update_follower_fetch(2, 3, now_ms=0)
    for second in range(1, 100):
        leader.append_as_leader(build_batch())
        leader.update_follower_fetch(2, leader.log_end_offset - 1, now_ms=second * 1_000)
    assert 2 not in leader.out_of_sync_replicas(99 * 1_000 + LAG_MS - 1_000, LAG_MS)


def test_a_replica_outside_the_isr_joins_once_it_reaches_the_high_watermark_in_this_epoch(make_partition):
    partition = make_partition(1)
    partition.make_leader(assignment(1, 0), now_ms=0)
    partition.append_as_leader(build_batch(3))
    partition.make_leader(assignment(1, 1, isr=(1, 2)), now_ms=0)  # epoch 1 starts at offset 3
    partition.append_as_leader(build_batch(2))
    partition.update_follower_fetch(2, 5, now_ms=1)
    assert partition.high_watermark == 5
    partition.update_follower_fetch(3, 4, now_ms=1)
    assert not partition.isr_expansion_candidate(3)  # below the HW
    partition.update_follower_fetch(3, 5, now_ms=2)
    assert partition.isr_expansion_candidate(3)
    assert not partition.isr_expansion_candidate(3, fenced=[3])
    assert not partition.isr_expansion_candidate(2)  # already in
    partition.pending_isr = (1, 2, 3)
    assert not partition.isr_expansion_candidate(3)  # one proposal at a time


def test_the_isr_committed_by_the_control_plane_is_adopted_unless_stale(leader):
    leader.pending_isr = (1, 2)
    leader.apply_isr(assignment(1, 0, isr=(1, 2), partition_epoch=3))
    assert (leader.isr, leader.partition_epoch, leader.pending_isr) == ((1, 2), 3, None)
    leader.apply_isr(assignment(1, 0, isr=(1, 2, 3), partition_epoch=2))  # older: ignored
    assert (leader.isr, leader.partition_epoch) == ((1, 2), 3)
    leader.apply_isr(assignment(1, 5, isr=(1,), partition_epoch=9))  # another leader epoch: make_leader's job
    assert leader.isr == (1, 2)


#
# The high-watermark checkpoint
#

def test_a_restarted_replica_starts_from_its_checkpointed_high_watermark(tmp_path, listener):
    """Without the checkpoint a restarted leader would serve nothing until every ISR follower fetched again;
    with it, it serves what it had acknowledged, and never more than its log holds."""
    def open_partition() -> tuple[LogManager, Partition]:
        manager = LogManager([tmp_path / "data"], {}, ManualClock())
        manager.startup()
        return manager, Partition("t", 0, 1, manager.get_or_create_log("t", 0), listener)

    manager, partition = open_partition()
    partition.make_leader(assignment(1, 0), now_ms=0)
    for _ in range(4):
        partition.append_as_leader(build_batch())
    partition.update_follower_fetch(2, 3, now_ms=1)
    partition.update_follower_fetch(3, 3, now_ms=1)
    assert partition.high_watermark == 3
    manager.shutdown()

    manager, restarted = open_partition()
    assert (restarted.log_end_offset, restarted.high_watermark) == (4, 3)
    restarted.make_leader(assignment(1, 1), now_ms=0)
    region = restarted.read(0, 1 << 20)
    assert region is not None and len(read_bytes(region)) == 3 * len(build_batch())  # 0-2, not offset 3
    restarted.make_follower(assignment(2, 2))
    restarted.truncate_to(2)
    assert restarted.high_watermark == 2
    manager.shutdown()

    manager, again = open_partition()
    assert again.high_watermark == 2
    manager.shutdown()
