"""`ReplicaFetcher` against a fake leader broker (`fake_leader`) serving real leader partitions: it catches
up byte for byte, truncates a divergent log to the leader's epoch boundary (OffsetForLeaderEpoch) first,
backs off on errors and lost connections, follows a leader change, and restarts at the leader's log start
when its own log ended before it."""

import asyncio
import socket
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from brokerd.protocol.api_keys import ApiKey
from brokerd.replication import fetcher as fetcher_module
from brokerd.replication.config import ReplicationConfig
from brokerd.replication.fetcher import ReplicaFetcher
from brokerd.replication.partition import Partition
from brokerd.storage import read_bytes
from tests.brokerd.replication.conftest import assignment, build_batch
from tests.brokerd.replication.fake_leader import FakeLeader

KEY = ("t", 0)
BACKOFF_MS = 100
CONFIG = ReplicationConfig(replica_fetch_backoff_ms=BACKOFF_MS, replica_fetch_wait_max_ms=100, socket_timeout_ms=5_000)


async def eventually(condition: Callable[[], bool], timeout_s: float = 10.0, message: str = "") -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)
    assert condition(), message


def stored(partition: Partition) -> bytes:
    region = partition.read(partition.log_start_offset, 1 << 30, up_to_log_end=True)
    return read_bytes(region) if region is not None else b""


def leading(make_partition, node_id: int, epoch: int, batches: int, isr=(1, 2)) -> Partition:
    partition = make_partition(node_id)
    partition.make_leader(assignment(node_id, epoch, replicas=(1, 2), isr=isr), now_ms=0)
    for i in range(batches):
        partition.append_as_leader(build_batch(value=f"n{node_id}e{epoch}-{i}-".encode()))
    return partition


def following(make_partition, node_id: int, leader_id: int, epoch: int) -> Partition:
    partition = make_partition(node_id)
    partition.make_follower(assignment(leader_id, epoch, replicas=(1, 2)))
    return partition


async def fetching(leader: FakeLeader, follower: Partition) -> ReplicaFetcher:
    fetcher = ReplicaFetcher(leader.endpoint, follower.node_id, CONFIG)
    fetcher.add(follower)
    fetcher.start()
    return fetcher


def test_follower_catches_up_byte_for_byte_and_learns_the_high_watermark(make_partition):
    async def scenario():
        leader_partition = leading(make_partition, 1, 0, 5)
        follower = following(make_partition, 2, 1, 0)
        leader = await FakeLeader(1, {KEY: leader_partition}).start()
        fetcher = await fetching(leader, follower)
        try:
            await eventually(lambda: follower.high_watermark == 5, message="caught up with the HW")
            leader_partition.append_as_leader(build_batch(3))  # new data reaches the follower through its long poll
            await eventually(lambda: follower.high_watermark == 8, message="the next batch")
            assert stored(follower) == stored(leader_partition)
            assert not leader.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH)  # an empty log has no epoch to check
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_divergent_follower_truncates_to_the_new_leaders_epoch_boundary(make_partition):
    """Broker 2 led epoch 1 and appended offsets 0-4; broker 1 had replicated 0-2 when it was elected for
    epoch 2 and appended its own 3-4. Broker 2 must drop its 3-4 before fetching, or the replicas diverge."""
    async def scenario():
        old_leader = leading(make_partition, 2, 1, 5)
        new_leader = following(make_partition, 1, 2, 1)
        first_three = stored(old_leader)[: 3 * len(build_batch(value=b"n2e1-0-"))]
        new_leader.append_as_follower(memoryview(first_three), 3, 0)
        new_leader.make_leader(assignment(1, 2, replicas=(1, 2)), now_ms=0)
        for i in range(2):
            new_leader.append_as_leader(build_batch(value=f"new-{i}-".encode()))
        old_leader.make_follower(assignment(1, 2, replicas=(1, 2)))
        leader = await FakeLeader(1, {KEY: new_leader}).start()
        fetcher = await fetching(leader, old_leader)
        try:
            await eventually(lambda: old_leader.log_end_offset == 5 and stored(old_leader) == stored(new_leader),
                             message="identical to the new leader")
            [asked] = leader.requests(ApiKey.OFFSET_FOR_LEADER_EPOCH)[0].partitions
            assert asked == ("t", 0, 1)  # our latest epoch
            assert leader.requests(ApiKey.FETCH)[0].partitions == [("t", 0, 3)]  # fetched only after truncating
            assert old_leader.log.leader_epoch_cache.entries() == [(1, 0), (2, 3)]
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_leader_that_never_saw_our_epoch_answers_the_epoch_before_it(make_partition):
    """Our latest epoch 3 (offsets 2-3, never replicated) is unknown to the leader of epoch 4, which answers
    where its epoch 0 ended: we truncate there."""
    async def scenario():
        leader_partition = leading(make_partition, 1, 0, 2, isr=(1,))
        follower = following(make_partition, 2, 1, 0)
        follower.append_as_follower(memoryview(stored(leader_partition)), 2, 0)
        follower.make_leader(assignment(2, 3, replicas=(1, 2), isr=(2,)), now_ms=0)
        follower.append_as_leader(build_batch(2, value=b"lost"))
        leader_partition.make_leader(assignment(1, 4, replicas=(1, 2), isr=(1,)), now_ms=0)
        leader_partition.append_as_leader(build_batch(3, value=b"kept"))
        follower.make_follower(assignment(1, 4, replicas=(1, 2), isr=(1,)))
        leader = await FakeLeader(1, {KEY: leader_partition}).start()
        fetcher = await fetching(leader, follower)
        try:
            await eventually(lambda: stored(follower) == stored(leader_partition), message="identical")
            assert leader.requests(ApiKey.FETCH)[0].partitions == [("t", 0, 2)]
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_partition_errors_back_off_then_fetching_resumes(make_partition):
    async def scenario():
        leader_partition = leading(make_partition, 1, 0, 3)
        follower = following(make_partition, 2, 1, 0)
        errors = [ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch]
        leader = await FakeLeader(1, {KEY: leader_partition}, errors={KEY: list(errors)}).start()
        fetcher = await fetching(leader, follower)
        try:
            await eventually(lambda: follower.log_end_offset == 3, message="caught up after the errors")
            fetches = leader.requests(ApiKey.FETCH)
            gaps = [b.at - a.at for a, b in zip(fetches[:3], fetches[1:4], strict=True)]
            assert all(gap >= BACKOFF_MS / 1000 * 0.9 for gap in gaps), gaps  # replica.fetch.backoff.ms each
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_lost_connections_are_retried_with_a_growing_backoff(make_partition):
    async def scenario():
        leader_partition = leading(make_partition, 1, 0, 3)
        follower = following(make_partition, 2, 1, 0)
        leader = await FakeLeader(1, {KEY: leader_partition}, close_on_accept=True).start()  # restarting
        fetcher = await fetching(leader, follower)
        try:
            await eventually(lambda: len(leader.accepts) >= 5, message="five connection attempts")
            gaps = [b - a for a, b in zip(leader.accepts[:4], leader.accepts[1:5], strict=True)]
            growing = all(later > earlier * 1.5 for earlier, later in zip(gaps[:-1], gaps[1:], strict=True))
            assert gaps[0] >= BACKOFF_MS / 1000 * 0.9 and growing, gaps
            leader.close_on_accept = False
            await eventually(lambda: follower.log_end_offset == 3, message="caught up once the leader serves")
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_leader_not_listening_yet_is_retried(make_partition):
    async def scenario():
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        leader = FakeLeader(1, {KEY: leading(make_partition, 1, 0, 3)}, port=port)
        follower = following(make_partition, 2, 1, 0)
        fetcher = await fetching(leader, follower)  # connection refused until the leader starts
        try:
            await asyncio.sleep(0.3)
            assert follower.log_end_offset == 0
            await leader.start(port)
            await eventually(lambda: follower.log_end_offset == 3, message="caught up once the leader listens")
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_leader_change_moves_the_partition_to_the_new_leaders_fetcher(make_partition):
    async def scenario():
        first = leading(make_partition, 1, 0, 2, isr=(1, 3))
        follower = following(make_partition, 3, 1, 0)
        old = await FakeLeader(1, {KEY: first}).start()
        old_fetcher = await fetching(old, follower)
        second = following(make_partition, 2, 1, 0)
        try:
            await eventually(lambda: follower.log_end_offset == 2, message="following broker 1")
            second.append_as_follower(memoryview(stored(first)), 2, 0)
            second.make_leader(assignment(2, 1, replicas=(1, 2, 3)), now_ms=0)
            second.append_as_leader(build_batch(value=b"epoch1"))
            # What the replica manager does on the new image: leave the old fetcher, join the new leader's.
            old_fetcher.remove(KEY)
            follower.make_follower(assignment(2, 1, replicas=(1, 2, 3)))
            new = await FakeLeader(2, {KEY: second}).start()
            new_fetcher = await fetching(new, follower)
            first.append_as_leader(build_batch(value=b"zombie"))  # the deposed leader's late write never arrives
            await eventually(lambda: stored(follower) == stored(second), message="following broker 2")
            fetched_from_old = len(old.requests(ApiKey.FETCH))
            await asyncio.sleep(0.3)
            assert len(old.requests(ApiKey.FETCH)) == fetched_from_old  # nothing asked of the old leader
            assert stored(follower) == stored(second)
            await new_fetcher.stop()
            await new.stop()
        finally:
            await old_fetcher.stop()
            await old.stop()

    asyncio.run(scenario())


def test_follower_behind_the_leaders_log_start_restarts_there(make_partition):
    async def scenario():
        leader_partition = leading(make_partition, 1, 0, 5, isr=(1,))
        leader_partition.delete_records_before(3)  # DeleteRecords (or retention) on the leader
        follower = following(make_partition, 2, 1, 0)
        leader = await FakeLeader(1, {KEY: leader_partition}).start()
        fetcher = await fetching(leader, follower)
        try:
            await eventually(lambda: follower.log_end_offset == 5, message="caught up from the log start")
            assert follower.log_start_offset == 3
            assert [r.partitions for r in leader.requests(ApiKey.LIST_OFFSETS)] == [[("t", 0, -2)]]  # earliest
            assert stored(follower) == stored(leader_partition)
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_in_a_session_a_round_names_only_the_partitions_that_changed(make_partition):
    """The fetcher's bookkeeping of what changed (`ReplicaFetcher._update`), in a fetch session over three
    partitions: once caught up, a round names none; an append on one leader partition is fetched and then named at
    its new offset, alone; a partition backing off after an error is forgotten, then named again when its backoff
    ends; a removed one is forgotten."""
    async def scenario():
        leaders, followers = {}, {}
        for index in range(3):
            leaders[("t", index)] = leader_partition = make_partition(1, index=index)
            leader_partition.make_leader(assignment(1, 0, replicas=(1, 2), isr=(1, 2)), now_ms=0)
            leader_partition.append_as_leader(build_batch(2))
            followers[("t", index)] = follower = make_partition(2, index=index)
            follower.make_follower(assignment(1, 0, replicas=(1, 2)))
        leader = await FakeLeader(1, leaders, sessions=True).start()
        fetcher = ReplicaFetcher(leader.endpoint, 2, CONFIG)
        for follower in followers.values():
            fetcher.add(follower)
        fetcher.start()

        def since(start: int) -> list:
            return leader.requests(ApiKey.FETCH)[start:]

        async def named_alone(what: list, start: int) -> None:
            await eventually(lambda: any(r.partitions for r in since(start)), message=f"{what} named")
            assert [r.partitions for r in since(start) if r.partitions][0] == what

        try:
            await eventually(lambda: all(f.log_end_offset == 2 for f in followers.values()), message="caught up")
            start = len(leader.requests(ApiKey.FETCH))
            await eventually(lambda: len(since(start)) >= 3, message="idle rounds")
            assert not any(r.partitions or r.forgotten for r in since(start)[1:])

            start = len(leader.requests(ApiKey.FETCH))
            leaders[("t", 1)].append_as_leader(build_batch(3))
            await eventually(lambda: followers[("t", 1)].log_end_offset == 5, message="the append fetched")
            await named_alone([("t", 1, 5)], start)

            start = len(leader.requests(ApiKey.FETCH))
            leader.errors[("t", 2)] = [ErrorCode.not_leader_or_follower]
            await eventually(lambda: any(r.forgotten == [("t", 2)] for r in since(start)), message="t-2 forgotten")
            await named_alone([("t", 2, 2)], start)  # its backoff ended: named again

            start = len(leader.requests(ApiKey.FETCH))
            fetcher.remove(("t", 0))
            await eventually(lambda: any(r.forgotten == [("t", 0)] for r in since(start)), message="t-0 forgotten")
            assert not any(r.partitions for r in since(start))
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())


def test_a_log_start_moved_by_retention_on_the_follower_is_sent_again(make_partition, monkeypatch):
    """No event reports a follower's log start moved by its own retention: the fetcher's check of its cached
    positions (`_check_positions`) finds it, and the session names the partition again with it."""
    monkeypatch.setattr(fetcher_module, "POSITION_CHECK_S", 0.2)

    async def scenario():
        leader_partition = leading(make_partition, 1, 0, 5)
        follower = following(make_partition, 2, 1, 0)
        leader = await FakeLeader(1, {KEY: leader_partition}, sessions=True).start()
        fetcher = await fetching(leader, follower)
        try:
            await eventually(lambda: follower.high_watermark == 5, message="caught up")
            follower.log.delete_records_before(3)  # what retention does on the follower
            await eventually(lambda: any(r.log_start_offsets == [3] for r in leader.requests(ApiKey.FETCH)),
                             timeout_s=2, message="the new log start sent")
        finally:
            await fetcher.stop()
            await leader.stop()

    asyncio.run(scenario())
