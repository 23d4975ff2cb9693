"""The classic group state machine, driven by a ManualClock (no sleeps) with an in-memory `__consumer_offsets`.

Scenario tests follow a group through its life; the matrices are Burrow-style tables where every case is
named and says why the answer is what Kafka answers. Changing a case needs a reason from Kafka's code.
"""

import asyncio
import functools
import struct
from dataclasses import dataclass

import pytest

from brokerd.clock import ManualClock
from brokerd.config import GroupSettings
from brokerd.errors import BrokerError
from brokerd.groups import errors
from brokerd.groups.api import (
    GroupState,
    JoinGroupRequest,
    LeavingMember,
    OffsetCommitRequest,
    OffsetToCommit,
    SyncGroupRequest,
)
from brokerd.groups.coordinator import GroupCoordinator
from kafkaspec.consumer_offsets import GroupMetadataKey, OffsetCommitKey, OffsetCommitValue, decode_record

SESSION_MS = 10_000
REBALANCE_MS = 30_000
DELAY_MS = 3_000
RETENTION_MS = 60_000
CONFIG = GroupSettings(initial_rebalance_delay_ms=DELAY_MS, offsets_retention_ms=RETENTION_MS)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version | [topic] | user_data (null)."""
    body = b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    return struct.pack(">hi", 0, len(topics)) + body + struct.pack(">i", -1)


SUB = subscription("orders")


class Harness:
    """A loaded coordinator whose `__consumer_offsets` is the list `log`; `fail_with` makes appends fail."""

    def __init__(self, records=(), config: GroupSettings = CONFIG) -> None:
        self.clock = ManualClock()
        self.log: list[tuple[bytes, bytes | None]] = []
        self.fail_with: BrokerError | None = None
        self.coordinator = GroupCoordinator(clock=self.clock, append=self._append, config=config)
        self.coordinator.load(list(records))

    async def _append(self, records):
        if self.fail_with is not None:
            raise self.fail_with
        self.log.extend(records)

    async def advance(self, ms: int) -> None:
        """Move the clock, run due deadlines, and let spawned writes and futures settle."""
        self.clock.advance_ms(ms)
        self.coordinator.expire_due()
        await settle()

    def join(self, member_id="", instance=None, client="client", protocols=(("range", SUB),), group="g",
             session=SESSION_MS, rebalance=REBALANCE_MS, protocol_type="consumer") -> asyncio.Future:
        return self.coordinator.join_group(JoinGroupRequest(
            group, member_id, instance, client, "/127.0.0.1", session, rebalance, protocol_type, tuple(protocols)))

    def sync(self, member_id, generation_id, assignments=None, instance=None, group="g") -> asyncio.Future:
        return self.coordinator.sync_group(SyncGroupRequest(group, generation_id, member_id, instance,
                                                            assignments or {}))

    def heartbeat_error(self, member_id, generation_id, instance=None, group="g") -> str | None:
        try:
            self.coordinator.heartbeat(group, generation_id, member_id, instance)
        except errors.GroupError as exc:
            return exc.kafka_error
        return None

    def state(self, group="g") -> GroupState:
        return self.coordinator.describe_group(group).state


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def error_of(future: asyncio.Future) -> str:
    exc = future.exception()
    assert isinstance(exc, errors.GroupError), exc
    return exc.kafka_error


async def first_join(h: Harness, instance=None, **kw) -> asyncio.Future:
    """A v4+ dynamic member's two-step join (MEMBER_ID_REQUIRED, then with that id); static ones join at once."""
    if instance is not None:
        return h.join(instance=instance, **kw)
    first = h.join(**kw)
    assert error_of(first) == "MEMBER_ID_REQUIRED"
    return h.join(member_id=first.exception().member_id, **kw)


@dataclass
class StableGroup:
    members: list[str]  # join order; members[0] is the leader
    generation_id: int
    assignments: dict[str, bytes]


async def stable_group(h: Harness, n: int = 3, instances=None) -> StableGroup:
    """n members join during the initial delay, the leader assigns, everyone syncs: Stable."""
    instances = instances or [None] * n
    joins = [await first_join(h, instance=instances[i], client=f"c{i}") for i in range(n)]
    assert not any(j.done() for j in joins), "the initial delay holds every join"
    await h.advance(DELAY_MS)  # new members arrived during the first delay: it is extended once
    await h.advance(DELAY_MS)
    results = [j.result() for j in joins]
    leader = results[0].leader_id
    members = [r.member_id for r in results]
    generation_id = results[0].generation_id
    assignments = {m: f"assignment-{i}".encode() for i, m in enumerate(members)}
    syncs = [h.sync(m, generation_id, assignments if m == leader else None) for m in members]
    await settle()
    assert [s.result().assignment for s in syncs] == list(assignments.values())
    return StableGroup(members, generation_id, assignments)


def run(coroutine_fn):
    """Run an async test body on a fresh event loop."""
    @functools.wraps(coroutine_fn)
    def wrapper(*args, **kwargs):
        asyncio.run(coroutine_fn(*args, **kwargs))
    return wrapper


#
# Scenarios
#

@run
async def test_three_members_join_sync_and_heartbeat():
    """MEMBER_ID_REQUIRED, one generation for all three, the leader alone gets the members, assignments are
    stored as a v3 GroupMetadataValue and handed out; heartbeats then succeed."""
    h = Harness()
    joins = [await first_join(h, client=f"c{i}") for i in range(3)]
    assert h.state() is GroupState.PREPARING_REBALANCE
    await h.advance(DELAY_MS)
    assert not any(j.done() for j in joins), "members kept arriving during the delay: it is extended"
    await h.advance(DELAY_MS - 1)
    assert not any(j.done() for j in joins)
    await h.advance(1)
    results = [j.result() for j in joins]
    assert {r.generation_id for r in results} == {1}
    assert {r.leader_id for r in results} == {results[0].member_id}
    assert [len(r.members) for r in results] == [3, 0, 0]
    assert results[0].protocol_name == "range" and results[0].member_id.startswith("c0-")
    assert h.state() is GroupState.COMPLETING_REBALANCE

    followers = [h.sync(r.member_id, 1) for r in results[1:]]
    await settle()
    assert not any(f.done() for f in followers), "followers wait for the leader's assignment"
    assert h.log == []
    leader = h.sync(results[0].member_id, 1, {r.member_id: r.member_id.encode() for r in results})
    await settle()
    assert [f.result().assignment for f in [leader, *followers]] == [r.member_id.encode() for r in results]
    assert h.state() is GroupState.STABLE

    (key, value), = [decode_record(k, v) for k, v in h.log]
    assert key == GroupMetadataKey("g")
    assert (value.generation_id, value.protocol_name, value.leader) == (1, "range", results[0].member_id)
    assert [m.assignment for m in value.members] == [r.member_id.encode() for r in results]
    assert [m.subscription for m in value.members] == [SUB] * 3
    for r in results:
        assert h.heartbeat_error(r.member_id, 1) is None


@run
async def test_session_expiry_triggers_rebalance():
    """Two members heartbeat, the third falls silent: after its session timeout the group rebalances, the
    others learn it from their heartbeat and the next generation has two members."""
    h = Harness()
    group = await stable_group(h)
    alive, silent = group.members[:2], group.members[2]
    for _ in range(3):
        await h.advance(SESSION_MS // 3)
        assert [h.heartbeat_error(m, 1) for m in alive] == [None, None]
    assert h.state() is GroupState.STABLE
    await h.advance(SESSION_MS - 3 * (SESSION_MS // 3))
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat_error(silent, 1) == "UNKNOWN_MEMBER_ID"
    assert [h.heartbeat_error(m, 1) for m in alive] == ["REBALANCE_IN_PROGRESS"] * 2
    rejoins = [h.join(member_id=m) for m in alive]
    await settle()  # everyone left has rejoined: no need to wait for the rebalance timeout
    assert [r.result().generation_id for r in rejoins] == [2, 2]
    assert len(rejoins[0].result().members) == 2


@run
async def test_rebalance_timeout_removes_members_that_do_not_rejoin():
    """A rebalance waits at most the largest rebalance timeout; dynamic members that did not rejoin are out."""
    h = Harness()
    group = await stable_group(h)
    # A follower rejoining with a new subscription starts a rebalance (with unchanged metadata it would just
    # get the current generation back).
    rejoin = h.join(member_id=group.members[1], protocols=[("range", subscription("orders", "refunds"))])
    for _ in range(REBALANCE_MS // 5_000 - 1):
        await h.advance(5_000)
        h.heartbeat_error(group.members[0], 1)  # keeps its session but never rejoins
    assert not rejoin.done()
    await h.advance(5_000)
    result = rejoin.result()
    assert (result.generation_id, result.leader_id, len(result.members)) == (2, group.members[1], 1)
    assert h.heartbeat_error(group.members[0], 2) == "UNKNOWN_MEMBER_ID"


@run
async def test_static_member_restart_without_rebalance():
    """A static member restarting within its session timeout gets a new member id and its old assignment
    with no rebalance; the old id is fenced. The leader id returned is the old one so the restarted member
    does not compute an assignment."""
    h = Harness()
    group = await stable_group(h, instances=["i0", "i1", "i2"])
    old_id = group.members[1]
    h.log.clear()
    restart = h.join(instance="i1", client="c1")
    await settle()
    result = restart.result()
    assert result.member_id != old_id and result.member_id.startswith("i1-")
    assert (result.generation_id, result.leader_id, result.members) == (1, group.members[0], ())
    assert h.state() is GroupState.STABLE
    assert len(h.log) == 1, "the new member id is persisted"
    assert h.heartbeat_error(old_id, 1, instance="i1") == "FENCED_INSTANCE_ID"
    assert h.heartbeat_error(result.member_id, 1, instance="i1") is None
    sync = h.sync(result.member_id, 1, instance="i1")
    await settle()
    assert sync.result().assignment == group.assignments[old_id]


@run
async def test_static_leader_restart_keeps_leadership():
    """The leader is static: after its restart the group still names it (under its new id) as leader."""
    h = Harness()
    group = await stable_group(h, instances=["i0", "i1", "i2"])
    restart = h.join(instance="i0", client="c0")
    await settle()
    new_id = restart.result().member_id
    assert restart.result().leader_id == group.members[0], "the old id, so no needless assignment"
    rejoin = h.join(member_id=new_id, instance="i0")  # the leader rejoining forces a rebalance (as Kafka)
    others = [h.join(member_id=m, instance=f"i{i}") for i, m in enumerate(group.members) if i]
    await settle()
    assert rejoin.result().leader_id == new_id and len(rejoin.result().members) == 3
    assert {o.result().generation_id for o in others} == {2}


@run
async def test_leader_leaves():
    """The leader's LeaveGroup starts a rebalance at once; a remaining member becomes leader."""
    h = Harness()
    group = await stable_group(h)
    assert h.coordinator.leave_group("g", [LeavingMember(group.members[0])]) == [None]
    assert h.state() is GroupState.PREPARING_REBALANCE
    rejoins = [h.join(member_id=m) for m in group.members[1:]]
    await settle()
    assert rejoins[0].result().leader_id == group.members[1]
    assert rejoins[0].result().generation_id == 2


@run
async def test_last_member_leaving_empties_and_stores_the_group():
    """With no one left the join completes at once into Empty, stored with null protocol and leader."""
    h = Harness()
    group = await stable_group(h, n=1)
    h.log.clear()
    assert h.coordinator.leave_group("g", [LeavingMember(group.members[0])]) == [None]
    await settle()
    assert h.state() is GroupState.EMPTY
    (key, value), = [decode_record(k, v) for k, v in h.log]
    assert (value.generation_id, value.protocol_name, value.leader, value.members) == (2, None, None, ())


@run
async def test_leave_group_matrix():
    """Per-member LeaveGroup errors (v3+ batches)."""
    h = Harness()
    group = await stable_group(h, instances=["i0", "i1", "i2"])
    assert h.coordinator.leave_group("g", [
        LeavingMember("nobody"),                    # not a member
        LeavingMember(group.members[0], "i1"),      # i1 belongs to another member id: fenced
        LeavingMember("", "i-unknown"),             # administrative removal of an unknown instance
        LeavingMember("", "i2"),                    # administrative removal by instance id
    ]) == ["UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "UNKNOWN_MEMBER_ID", None]
    assert h.coordinator.leave_group("other", [LeavingMember("x")]) == ["UNKNOWN_MEMBER_ID"]


@run
async def test_protocol_selection_by_vote():
    """Only protocols all members support are candidates; each member votes for its first candidate."""
    h = Harness()
    a = await first_join(h, protocols=[("roundrobin", SUB), ("range", SUB)])
    b = await first_join(h, protocols=[("range", SUB), ("roundrobin", SUB), ("sticky", SUB)])
    c = await first_join(h, protocols=[("range", SUB), ("sticky", SUB), ("roundrobin", SUB)])
    mismatched = h.join(protocols=[("cooperative-sticky", SUB)])
    assert error_of(mismatched) == "INCONSISTENT_GROUP_PROTOCOL"
    assert error_of(h.join(protocol_type="connect")) == "INCONSISTENT_GROUP_PROTOCOL"
    await h.advance(2 * DELAY_MS)
    assert {f.result().protocol_name for f in (a, b, c)} == {"range"}


@run
async def test_pending_member_that_never_rejoins_expires():
    """A member told MEMBER_ID_REQUIRED that never comes back does not hold up the rebalance forever."""
    h = Harness()
    group = await stable_group(h, n=1)
    newcomer = h.join()
    assert error_of(newcomer) == "MEMBER_ID_REQUIRED"
    rejoin = h.join(member_id=group.members[0])
    await settle()
    assert not rejoin.done(), "waits for the pending member"
    await h.advance(SESSION_MS)
    assert rejoin.result().generation_id == 2


@run
async def test_follower_that_never_syncs_is_removed():
    """After the join completes, members must sync within the rebalance timeout (Kafka 3.2+)."""
    h = Harness()
    rebalance_ms = SESSION_MS - 2_000  # shorter than the session, so the pending sync is what removes it
    joins = [await first_join(h, rebalance=rebalance_ms) for _ in range(2)]
    await h.advance(2 * DELAY_MS)
    leader, follower = (j.result().member_id for j in joins)
    sync = h.sync(leader, 1, {leader: b"a"})
    await settle()
    assert sync.result().assignment == b"a"
    await h.advance(rebalance_ms - 1)
    assert h.state() is GroupState.STABLE
    await h.advance(1)
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat_error(follower, 1) == "UNKNOWN_MEMBER_ID"
    assert h.heartbeat_error(leader, 1) == "REBALANCE_IN_PROGRESS"


@run
async def test_failed_assignment_write_restarts_the_rebalance():
    """If the leader's assignment cannot be stored, waiting members get the mapped error (NOT_COORDINATOR for
    a lost leadership) and the group prepares a new rebalance."""
    h = Harness()
    joins = [await first_join(h) for _ in range(2)]
    await h.advance(2 * DELAY_MS)
    follower = h.sync(joins[1].result().member_id, 1)
    h.fail_with = type("NotLeader", (BrokerError,), {"kafka_error": "NOT_LEADER_OR_FOLLOWER"})()
    leader = h.sync(joins[0].result().member_id, 1, {})
    await settle()
    assert error_of(leader) == error_of(follower) == "NOT_COORDINATOR"
    assert h.state() is GroupState.PREPARING_REBALANCE


#
# Matrices
#

HEARTBEAT_CASES = [
    # (name, member, generation, instance, expected, why)
    ("current member", "m0", 1, None, None, "member of the current generation in a Stable group"),
    ("unknown member", "nobody", 1, None, "UNKNOWN_MEMBER_ID", "not a member of the group"),
    ("old generation", "m0", 0, None, "ILLEGAL_GENERATION", "generation does not match the group's"),
    ("future generation", "m0", 2, None, "ILLEGAL_GENERATION", "any mismatch is illegal"),
    ("unknown group", "m0", 1, "group:none", "UNKNOWN_MEMBER_ID", "Kafka answers unknown groups this way"),
]


@pytest.mark.parametrize(("member", "generation", "instance", "expected"),
                         [pytest.param(*c[1:5], id=c[0]) for c in HEARTBEAT_CASES])
@run
async def test_heartbeat_matrix(member, generation, instance, expected):
    h = Harness()
    group = await stable_group(h, n=1)
    member_id = group.members[0] if member == "m0" else member
    target = "none" if instance == "group:none" else "g"
    assert h.heartbeat_error(member_id, generation, group=target) == expected


COMMIT_CASES = [
    # (name, group state, member, generation, expected, why)
    ("simple commit, no group", "none", "", -1, None,
     "generation -1 without member: Kafka only stores offsets (a simple consumer)"),
    ("member commit, no group", "none", "m0", 1, "ILLEGAL_GENERATION",
     "a generation for a group that does not exist comes from a stale member"),
    ("simple commit, Empty group", "empty", "", -1, None, "Empty groups accept anonymous commits"),
    ("simple commit, Stable group", "stable", "", -1, "UNKNOWN_MEMBER_ID",
     "once the group has members only members may commit"),
    ("member, current generation", "stable", "m0", 1, None, "the normal consumer commit"),
    ("member, old generation", "stable", "m0", 0, "ILLEGAL_GENERATION", "a zombie from an older generation"),
    ("unknown member", "stable", "nobody", 1, "UNKNOWN_MEMBER_ID", "not a member"),
    ("member, during PreparingRebalance", "preparing", "m0", 1, None,
     "still allowed: the heartbeat tells the member to rejoin"),
    ("member, during CompletingRebalance", "completing", "m0", 1, "REBALANCE_IN_PROGRESS",
     "valid member and generation, but assignments are not out yet"),
]


@pytest.mark.parametrize(("state", "member", "generation", "expected"),
                         [pytest.param(*c[1:5], id=c[0]) for c in COMMIT_CASES])
@run
async def test_commit_validation_matrix(state, member, generation, expected):
    h = Harness()
    member_id = member
    if state == "empty":
        group = await stable_group(h, n=1)
        h.coordinator.leave_group("g", [LeavingMember(group.members[0])])
        await settle()
    elif state in ("stable", "preparing"):
        group = await stable_group(h, n=2)
        member_id = group.members[0] if member == "m0" else member
        if state == "preparing":  # the other member changed its subscription; this one has not rejoined yet
            h.join(member_id=group.members[1], protocols=[("range", subscription("other"))])
            assert h.state() is GroupState.PREPARING_REBALANCE
    elif state == "completing":
        join = await first_join(h)
        await h.advance(DELAY_MS)
        member_id = join.result().member_id
    request = OffsetCommitRequest("g", generation, member_id, None, {("orders", 0): OffsetToCommit(5)})
    try:
        result = (await h.coordinator.commit_offsets(request))[("orders", 0)]
    except errors.GroupError as exc:
        result = exc.kafka_error
    assert result == expected
    committed = h.coordinator.fetch_offsets("g", [("orders", 0)])[("orders", 0)]
    assert (committed is not None and committed.offset == 5) == (expected is None)


@run
async def test_commit_details():
    """Oversized metadata fails only its partition; a retention time writes a v1 value (expire timestamp)."""
    h = Harness()
    request = OffsetCommitRequest("g", -1, "", None, {("t", 0): OffsetToCommit(1, "x" * 5000),
                                                     ("t", 1): OffsetToCommit(2, "ok", leader_epoch=3)},
                                  retention_time_ms=1000)
    assert await h.coordinator.commit_offsets(request) == {("t", 0): "OFFSET_METADATA_TOO_LARGE", ("t", 1): None}
    (key, value), = [decode_record(k, v) for k, v in h.log]
    assert key == OffsetCommitKey("g", "t", 1)
    assert h.log[0][1][:2] == b"\x00\x01", "v1: the only version with an expire timestamp"
    now = h.clock.now_ms()
    assert value == OffsetCommitValue(2, "ok", now, -1, now + 1000), "v1 has no leader epoch"
    assert h.coordinator.fetch_offsets("g", None) == {("t", 1): OffsetCommitValue(2, "ok", now, 3, now + 1000)}
    h.fail_with = type("TooBig", (BrokerError,), {"kafka_error": "RECORD_LIST_TOO_LARGE"})()
    failed = await h.coordinator.commit_offsets(OffsetCommitRequest("g", -1, "", None, {("t", 1): OffsetToCommit(9)}))
    assert failed == {("t", 1): "INVALID_COMMIT_OFFSET_SIZE"}
    assert h.coordinator.fetch_offsets("g", [("t", 1)])[("t", 1)].offset == 2


EXPIRY_CASES = [
    # (name, setup, ms after commit, expired?, why)
    ("simple commit, before retention", "simple", RETENTION_MS - 1, False, "retention counts from the commit"),
    ("simple commit, at retention", "simple", RETENTION_MS, True, "then the offset and the group go"),
    ("Stable consumer, subscribed topic", "stable", 10 * RETENTION_MS, False,
     "offsets of subscribed topics never expire while the group is Stable"),
    ("Stable consumer, unsubscribed topic", "stable-other", RETENTION_MS, True,
     "offsets of topics no member subscribes to expire from their commit"),
    ("Empty group, before retention since empty", "emptied", RETENTION_MS + 5_000, False,
     "the group emptied 10 s after the commit: retention counts from then"),
    ("Empty group, retention since empty", "emptied", RETENTION_MS + 10_000, True,
     "retention passed since the group became Empty"),
    ("expire timestamp (v1)", "explicit", 1_000, True, "an explicit retention_time wins over the broker's"),
]


@pytest.mark.parametrize(("setup", "after_ms", "expired"),
                         [pytest.param(*c[1:4], id=c[0]) for c in EXPIRY_CASES])
@run
async def test_offsets_expiry(setup, after_ms, expired):
    h = Harness()
    topic = "other" if setup == "stable-other" else "orders"
    if setup in ("simple", "explicit"):
        retention = 1_000 if setup == "explicit" else -1
        await h.coordinator.commit_offsets(OffsetCommitRequest("g", -1, "", None, {(topic, 0): OffsetToCommit(7)},
                                                               retention_time_ms=retention))
    else:
        group = await stable_group(h, n=1)
        await h.coordinator.commit_offsets(OffsetCommitRequest("g", 1, group.members[0], None,
                                                               {(topic, 0): OffsetToCommit(7)}))
    if setup == "emptied":
        await h.advance(10_000)
        h.coordinator.leave_group("g", [LeavingMember(group.members[0])])
        await settle()
        after_ms -= 10_000
    h.clock.advance_ms(after_ms)
    h.log.clear()
    assert await h.coordinator.remove_expired_offsets() == int(expired)
    assert (h.coordinator.fetch_offsets("g", [(topic, 0)])[(topic, 0)] is None) == expired
    if expired:
        assert (OffsetCommitKey("g", topic, 0), None) in [decode_record(k, v) for k, v in h.log]
    if expired and setup in ("simple", "explicit"):
        assert h.coordinator.list_groups() == [], "an offsets-only group dies with its last offset"
        assert [decode_record(k, v)[0] for k, v in h.log] == [OffsetCommitKey("g", topic, 0)], \
            "no group tombstone: a generation-0 group never stored metadata"


@run
async def test_delete_groups_and_offsets():
    """DeleteGroups refuses non-empty groups; deleting writes offset and group tombstones. OffsetDelete
    refuses subscribed topics of a live consumer group."""
    h = Harness()
    group = await stable_group(h, n=1)
    commit = OffsetCommitRequest("g", 1, group.members[0], None,
                                 {("orders", 0): OffsetToCommit(1), ("old", 0): OffsetToCommit(2)})
    await h.coordinator.commit_offsets(commit)
    assert await h.coordinator.delete_offsets("g", [("orders", 0), ("old", 0)]) == {
        ("orders", 0): "GROUP_SUBSCRIBED_TO_TOPIC", ("old", 0): None}
    assert await h.coordinator.delete_groups(["g", "nope"]) == {"g": "NON_EMPTY_GROUP", "nope": "GROUP_ID_NOT_FOUND"}
    h.coordinator.leave_group("g", [LeavingMember(group.members[0])])
    await settle()
    h.log.clear()
    assert await h.coordinator.delete_groups(["g"]) == {"g": None}
    assert [decode_record(k, v) for k, v in h.log] == [(OffsetCommitKey("g", "orders", 0), None),
                                                       (GroupMetadataKey("g"), None)]
    assert h.state() is GroupState.DEAD and h.coordinator.list_groups() == []
    with pytest.raises(errors.GroupIdNotFoundError):
        await h.coordinator.delete_offsets("g", [("orders", 0)])


#
# Failover
#

@run
async def test_load_from_records_equals_pre_failover_state():
    """A new coordinator replaying the log sees the same groups, generations, members, assignments and
    offsets; deleted groups and offsets stay deleted."""
    h = Harness()
    group = await stable_group(h, instances=[None, "i1", None])
    await h.coordinator.commit_offsets(OffsetCommitRequest(
        "g", 1, group.members[0], None, {("orders", 0): OffsetToCommit(10, "m", 4), ("orders", 1): OffsetToCommit(11)}))
    await h.coordinator.commit_offsets(OffsetCommitRequest("g", 1, group.members[1], "i1",
                                                           {("orders", 0): OffsetToCommit(12)}))
    await h.coordinator.commit_offsets(OffsetCommitRequest("simple", -1, "", None, {("t", 0): OffsetToCommit(3)}))
    await h.coordinator.commit_offsets(OffsetCommitRequest("gone", -1, "", None, {("t", 0): OffsetToCommit(3)}))
    await h.coordinator.delete_groups(["gone"])
    await h.coordinator.delete_offsets("g", [("orders", 1)])  # refused: subscribed, so it stays

    before = ({g.group_id: g for g in h.coordinator.list_groups()},
              {g: h.coordinator.describe_group(g) for g in ("g", "simple", "gone")},
              {g: h.coordinator.fetch_offsets(g, None) for g in ("g", "simple", "gone")})
    h.coordinator.unload()
    failover = Harness(records=h.log)
    after = ({g.group_id: g for g in failover.coordinator.list_groups()},
             {g: failover.coordinator.describe_group(g) for g in ("g", "simple", "gone")},
             {g: failover.coordinator.fetch_offsets(g, None) for g in ("g", "simple", "gone")})
    assert after == before
    await failover.advance(SESSION_MS // 2)
    assert failover.heartbeat_error(group.members[2], 1) is None, "members keep their ids and generation"
    await failover.advance(SESSION_MS // 2)
    assert failover.state() is GroupState.PREPARING_REBALANCE, "members are expected to heartbeat again"


@run
async def test_load_and_unload_lifecycle():
    """Before `load` every call is COORDINATOR_LOAD_IN_PROGRESS; `unload` fails waiting joins with
    NOT_COORDINATOR and later calls raise it."""
    clock = ManualClock()

    async def append(records):
        pass

    coordinator = GroupCoordinator(clock=clock, append=append, config=CONFIG)
    with pytest.raises(errors.CoordinatorLoadInProgressError):
        coordinator.list_groups()
    coordinator.load([])
    waiting = coordinator.join_group(JoinGroupRequest("g", "", None, "c", "h", SESSION_MS, REBALANCE_MS,
                                                      "consumer", (("range", SUB),), require_known_member_id=False))
    assert not waiting.done()
    coordinator.unload()
    assert error_of(waiting) == "NOT_COORDINATOR"
    with pytest.raises(errors.NotCoordinatorError):
        coordinator.heartbeat("g", 1, "m", None)


JOIN_ERROR_CASES = [
    # (name, kwargs, expected, why)
    ("empty group id", {"group": ""}, "INVALID_GROUP_ID", "JoinGroup needs a group id"),
    ("session too short", {"session": 5_999}, "INVALID_SESSION_TIMEOUT", "below group.min.session.timeout.ms"),
    ("session too long", {"session": 1_800_001}, "INVALID_SESSION_TIMEOUT", "above group.max.session.timeout.ms"),
    ("unknown member id, no group", {"member_id": "x", "group": "new"}, "UNKNOWN_MEMBER_ID",
     "a member id the coordinator never handed out"),
    ("empty protocol type", {"protocol_type": ""}, "INCONSISTENT_GROUP_PROTOCOL", "an Empty group needs a type"),
    ("no protocols", {"protocols": []}, "INCONSISTENT_GROUP_PROTOCOL", "and at least one protocol"),
]


@pytest.mark.parametrize(("kwargs", "expected"), [pytest.param(*c[1:3], id=c[0]) for c in JOIN_ERROR_CASES])
@run
async def test_join_errors(kwargs, expected):
    h = Harness()
    assert error_of(h.join(**kwargs)) == expected
