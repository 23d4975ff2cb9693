"""The classic group coordinator of one `__consumer_offsets` partition (Kafka's `GroupCoordinator` +
`GroupMetadataManager` for the groups that hash to that partition): the one object the group handlers and
the `GroupManager` talk to.

Sans-IO: time comes from the injected `Clock`, and every write goes through the injected `append(records)`
coroutine (to the partition's replicated log), which returns once the records are durable and raises a
`BrokerError` otherwise. Called only from the event loop; not thread-safe.

It owns the lifecycle and the table of groups, and hands each request to the module of its concern:
`membership` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, rebalances, sessions), `offsets` (OffsetCommit,
OffsetFetch, OffsetDelete, DeleteGroups, expiry), `persistence` (what is written and replayed), `deadlines`
(the timers); request and result types are in `api`.

How the broker drives it:
- `load(records)` replays the partition (in log order) when this broker becomes its leader; until then
  every call raises `CoordinatorLoadInProgressError`. `unload()` when leadership moves away: waiting
  requests fail with NOT_COORDINATOR and every later call raises `NotCoordinatorError`.
- JoinGroup and SyncGroup answer later: `join_group`/`sync_group` return an `asyncio.Future` completed by
  a state transition (all members joined, the rebalance timeout, the leader's assignment); a failure is
  the future's exception, a `GroupError` with `kafka_error`.
- Deadlines (session timeouts, rebalance timeouts, the initial rebalance delay) are kept in a heap in
  monotonic ms: the broker calls `expire_due()` at `next_deadline_ms()` and whenever the clock passes it.
- `remove_expired_offsets()` every `offsets.retention.check.interval.ms`.

Errors of a whole request are raised (or set on the future); errors of one item of a batch (a partition,
a member, a group) are Kafka error names in the result, None meaning success.
"""

import asyncio
from collections.abc import Callable, Iterable
from typing import TypeVar

from brokerd.clock import Clock
from brokerd.config import GroupSettings
from brokerd.groups import errors
from brokerd.groups.api import (
    GroupDescription,
    GroupListing,
    GroupState,
    JoinGroupRequest,
    JoinGroupResult,
    LeavingMember,
    MemberDescription,
    OffsetCommitRequest,
    SyncGroupRequest,
    SyncGroupResult,
)
from brokerd.groups.deadlines import Deadlines
from brokerd.groups.membership import Membership
from brokerd.groups.offsets import CommittedOffsets
from brokerd.groups.persistence import Append, GroupLog, Record, replay
from brokerd.groups.state import Group, GroupTable
from brokerd.types import TopicPartition
from kafkaspec.consumer_offsets import OffsetCommitValue

_Request = TypeVar("_Request")
_Result = TypeVar("_Result")


class GroupCoordinator:
    """Groups of one `__consumer_offsets` partition: membership, rebalances and committed offsets."""

    def __init__(self, *, clock: Clock, append: Append, config: GroupSettings | None = None,
                 on_deadline: Callable[[int], None] | None = None) -> None:
        """`on_deadline(deadline_ms)` is told of every deadline armed (the broker's timer may need to wake
        earlier than it planned)."""
        config = config or GroupSettings()
        self._groups = GroupTable()
        self._loaded = False
        self._unloaded = False
        self._deadlines = Deadlines(clock, on_deadline)
        log = GroupLog(append)
        self._membership = Membership(clock, config, self._groups, self._deadlines, log)
        self._offsets = CommittedOffsets(clock, config, self._groups, log, self._membership)

    #
    # Lifecycle
    #

    def load(self, records: Iterable[Record]) -> None:
        """Replay the partition's records in log order (later records win, tombstones delete), then serve.

        A loaded group with members is Stable at its stored generation (Empty without members); every
        member gets a fresh session timeout. Offsets without group metadata form "simple" Empty groups.
        A record this broker cannot read (malformed, or a newer schema version) is logged and skipped.
        """
        if self._loaded or self._unloaded:
            raise AssertionError("a coordinator is loaded once")
        metadata, offsets = replay(records)
        for group_id in metadata.keys() | {g for g, o in offsets.items() if o}:
            group = Group.from_value(group_id, metadata.get(group_id))
            for member in group.members.values():
                self._membership.schedule_heartbeat(group, member)
            group.offsets = offsets.get(group_id, {})
            self._groups[group_id] = group
        self._loaded = True

    def unload(self) -> None:
        """Leadership moved away: fail waiting Join/Sync futures with NOT_COORDINATOR and stop serving."""
        self._unloaded = True
        for group in self._groups.values():
            for member in group.members.values():
                member.complete_join(errors.NotCoordinatorError())
                member.complete_sync(errors.NotCoordinatorError())
            group.state = GroupState.DEAD
        self._groups.clear()
        self._deadlines.clear()

    def _check_serving(self) -> None:
        if self._unloaded:
            raise errors.NotCoordinatorError()
        if not self._loaded:
            raise errors.CoordinatorLoadInProgressError()

    def next_deadline_ms(self) -> int | None:
        """The earliest armed deadline (monotonic ms), or None."""
        return self._deadlines.next_deadline_ms()

    def expire_due(self) -> None:
        """Run every deadline at or before `clock.monotonic_ms()` (stale ones are no-ops)."""
        self._deadlines.expire_due()

    #
    # Membership (membership.Membership)
    #

    def join_group(self, request: JoinGroupRequest) -> asyncio.Future[JoinGroupResult]:
        """A future resolved when this member's join completes (or fails, as a `GroupError`)."""
        return self._answer_later(self._membership.join, request)

    def sync_group(self, request: SyncGroupRequest) -> asyncio.Future[SyncGroupResult]:
        """A future resolved with this member's assignment once the leader's assignment is stored."""
        return self._answer_later(self._membership.sync, request)

    def _answer_later(self, start: Callable[[_Request, asyncio.Future[_Result]], None],
                      request: _Request) -> asyncio.Future[_Result]:
        """A future for `request`, handed to `start`; a refusal (raised by `start` or because this
        coordinator is not serving) becomes the future's exception."""
        future: asyncio.Future[_Result] = asyncio.get_running_loop().create_future()
        try:
            self._check_serving()
            start(request, future)
        except errors.GroupError as exc:
            future.set_exception(exc)
        return future

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> None:
        """Keep the member's session alive; raises REBALANCE_IN_PROGRESS when it must rejoin."""
        self._check_serving()
        self._membership.heartbeat(group_id, generation_id, member_id, group_instance_id)

    def leave_group(self, group_id: str, members: list[LeavingMember]) -> list[str | None]:
        """Remove members; one error name (or None) per leaving member, in order."""
        self._check_serving()
        return self._membership.leave(group_id, members)

    #
    # DescribeGroups, ListGroups
    #

    def describe_group(self, group_id: str) -> GroupDescription:
        """An unknown group is described as Dead with no members (Kafka answers NONE, not an error)."""
        self._check_serving()
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, GroupState.DEAD, "", "", ())
        stable = group.state is GroupState.STABLE
        members = tuple(
            MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                              m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                              m.assignment if stable else b"")
            for m in group.members.values())
        return GroupDescription(group_id, group.state, group.protocol_type or "",
                                (group.protocol_name or "") if stable else "", members)

    def list_groups(self) -> list[GroupListing]:
        self._check_serving()
        return [GroupListing(g.group_id, g.protocol_type or "", g.state) for g in self._groups.values()]

    #
    # Offsets and deletion (offsets.CommittedOffsets)
    #

    async def commit_offsets(self, request: OffsetCommitRequest) -> dict[TopicPartition, str | None]:
        """Validate and store offsets; one error name (or None) per partition. Group-level failures raise."""
        self._check_serving()
        return await self._offsets.commit(request)

    def fetch_offsets(self, group_id: str,
                      partitions: list[TopicPartition] | None) -> dict[TopicPartition, OffsetCommitValue | None]:
        """Committed offsets of `partitions` (None: every committed partition); None where nothing is
        committed (the handler answers offset -1, metadata "")."""
        self._check_serving()
        return self._offsets.fetch(group_id, partitions)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> dict[TopicPartition, str | None]:
        """OffsetDelete: allowed for an Empty group, or for topics a consumer group does not subscribe to."""
        self._check_serving()
        return await self._offsets.delete(group_id, partitions)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, str | None]:
        """Delete Empty groups with their offsets (tombstones); NON_EMPTY_GROUP for groups with members."""
        self._check_serving()
        return await self._offsets.delete_groups(group_ids)

    async def remove_expired_offsets(self) -> int:
        """Apply `offsets.retention.minutes`; Empty groups left without offsets are deleted. Returns the
        number of offsets removed."""
        self._check_serving()
        return await self._offsets.remove_expired()
