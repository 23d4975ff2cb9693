"""Membership and rebalances of the classic group protocol (Kafka's `GroupCoordinator` minus offsets): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup, the rebalance they drive (PreparingRebalance → CompletingRebalance →
Stable), static members, and the session, rebalance and pending-sync deadlines.

`GroupCoordinator` calls in here once it has checked that it is serving. JoinGroup and SyncGroup answer
later: `join`/`sync` park the request's future on its `Member`; a state transition answers it (all members
joined, the rebalance timeout, the leader's assignment stored); a refusal raises a `GroupError` at once.
Group metadata is written after each generation's assignment (`GroupLog.store_group`); a failed write sends
the group back to rebalancing. Event loop only; not thread-safe.
"""

import asyncio
import logging
import uuid
from collections.abc import Awaitable

from brokerd.clock import Clock
from brokerd.config import GroupSettings
from brokerd.groups import errors
from brokerd.groups.api import (
    GroupState,
    JoinedMember,
    JoinGroupRequest,
    JoinGroupResult,
    LeavingMember,
    SyncGroupRequest,
    SyncGroupResult,
)
from brokerd.groups.deadlines import Deadlines
from brokerd.groups.persistence import GroupLog
from brokerd.groups.state import Group, GroupTable, Member

logger = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs


class Membership:
    """The members and rebalances of every group of one coordinator (`groups`, shared with the offsets)."""

    def __init__(self, clock: Clock, config: GroupSettings, groups: GroupTable, deadlines: Deadlines,
                 log: GroupLog) -> None:
        self._clock = clock
        self._config = config
        self._groups = groups
        self._deadlines = deadlines
        self._log = log
        self._tasks: set[asyncio.Task[None]] = set()

    #
    # JoinGroup
    #

    def join(self, request: JoinGroupRequest, future: asyncio.Future[JoinGroupResult]) -> None:
        """JoinGroup: `future` is answered when this member's join completes; raises a `GroupError` to refuse."""
        if not request.group_id:
            raise errors.InvalidGroupIdError()
        if not (self._config.min_session_timeout_ms <= request.session_timeout_ms
                <= self._config.max_session_timeout_ms):
            raise errors.InvalidSessionTimeoutError()
        group = self._groups.get(request.group_id)
        if group is None:
            if request.member_id:
                raise errors.UnknownMemberIdError()
            group = Group(request.group_id, GroupState.EMPTY, self._clock.now_ms())
            self._groups[request.group_id] = group
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        if not group.supports_protocols(request.protocol_type, [name for name, _ in request.protocols]):
            raise errors.InconsistentGroupProtocolError()
        if not request.member_id:
            self._join_new_member(group, request, future)
        else:
            self._join_known_member(group, request, future)

    def _join_new_member(self, group: Group, request: JoinGroupRequest,
                         future: asyncio.Future[JoinGroupResult]) -> None:
        full = len(group.members) + len(group.pending_members) >= self._config.max_size
        if full and request.group_instance_id not in group.static_members:
            raise errors.GroupMaxSizeReachedError()
        member_id = f"{request.group_instance_id or request.client_id}-{uuid.uuid4()}"
        if request.group_instance_id is not None:
            self._join_static_member(group, request, member_id, future)
        elif request.require_known_member_id:
            self._schedule_pending_member(group, member_id, request.session_timeout_ms)
            raise errors.MemberIdRequiredError(member_id)
        else:
            self._add_member_and_rebalance(group, request, member_id, future)

    def _join_static_member(self, group: Group, request: JoinGroupRequest, member_id: str,
                            future: asyncio.Future[JoinGroupResult]) -> None:
        assert request.group_instance_id is not None
        old_member_id = group.static_members.get(request.group_instance_id)
        if old_member_id is None:
            self._add_member_and_rebalance(group, request, member_id, future)
            return
        # A known static member restarted: its old member id is fenced, its place and assignment kept.
        previous_leader = group.leader_id
        old = group.members[old_member_id]
        old.complete_join(errors.FencedInstanceIdError())
        old.complete_sync(errors.FencedInstanceIdError())
        saved = (old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(request.group_instance_id, old_member_id, member_id)
        self._update_member(member, request)
        self.schedule_heartbeat(group, member)
        if group.state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # No rebalance: persist the new member id and answer with the current generation. The old
                # leader id is returned so that a restarted leader does not compute a needless assignment.
                member.join_future = future
                self._spawn(self._store_static_replacement(
                    group, member, old_member_id, saved, previous_leader or member_id))
            else:
                member.join_future = future
                self._maybe_prepare_rebalance(group)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            member.join_future = future
            self._prepare_rebalance(group)
        else:  # PreparingRebalance: wait for the join to complete like everyone else
            member.join_future = future
            self._maybe_complete_join(group)

    async def _store_static_replacement(self, group: Group, member: Member, old_member_id: str,
                                        saved: tuple[tuple[tuple[str, bytes], ...], int, int],
                                        leader_id: str) -> None:
        assignments = {m.member_id: m.assignment for m in group.members.values()}
        generation_id = group.generation_id
        try:
            await self._log.store_group(group, assignments)
        except errors.AppendFailedError:
            if self._groups.is_current(group) and member.member_id in group.members:
                new_member_id = member.member_id
                assert member.group_instance_id is not None
                group.replace_static_member(member.group_instance_id, new_member_id, old_member_id)
                member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = saved
            member.complete_join(errors.UnknownMemberIdError())
            return
        member.complete_join(JoinGroupResult(
            member.member_id, generation_id, group.protocol_type, group.protocol_name, leader_id))

    def _join_known_member(self, group: Group, request: JoinGroupRequest,
                           future: asyncio.Future[JoinGroupResult]) -> None:
        if request.member_id in group.pending_members:
            if request.group_instance_id is not None:
                raise errors.UnknownMemberIdError()
            del group.pending_members[request.member_id]
            self._add_member_and_rebalance(group, request, request.member_id, future)
            return
        group.validate_current_member(request.member_id, request.group_instance_id)
        member = group.members[request.member_id]
        if group.state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, request, future)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            if member.matches(request.protocols):
                # The member lost our JoinGroup response: answer again for the current generation.
                future.set_result(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, request, future)
        elif group.state is GroupState.STABLE:
            if group.leader_id == member.member_id or not member.matches(request.protocols):
                # The leader rejoining means it wants a new assignment (e.g. its subscription changed).
                self._update_member_and_rebalance(group, member, request, future)
            else:
                future.set_result(JoinGroupResult(member.member_id, group.generation_id, group.protocol_type,
                                                  group.protocol_name, group.leader_id or ""))
        else:
            raise errors.UnknownMemberIdError()

    def _add_member_and_rebalance(self, group: Group, request: JoinGroupRequest, member_id: str,
                                  future: asyncio.Future[JoinGroupResult]) -> None:
        member = Member(member_id, request.group_instance_id, request.client_id, request.client_host,
                        request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
                        request.protocols, is_new=True, join_future=future)
        group.add(member)
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        self.schedule_heartbeat(group, member)
        self._maybe_prepare_rebalance(group)
        self._maybe_complete_join(group)

    @staticmethod
    def _update_member(member: Member, request: JoinGroupRequest) -> None:
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        member.client_id = request.client_id
        member.client_host = request.client_host

    def _update_member_and_rebalance(self, group: Group, member: Member, request: JoinGroupRequest,
                                     future: asyncio.Future[JoinGroupResult]) -> None:
        self._update_member(member, request)
        member.complete_join(errors.RebalanceInProgressError())  # an older join of the same member
        member.join_future = future
        self._maybe_prepare_rebalance(group)
        self._maybe_complete_join(group)

    def _join_result(self, group: Group, member: Member) -> JoinGroupResult:
        leader_id = group.leader_id or ""
        members = ()
        if member.member_id == leader_id:
            assert group.protocol_name is not None
            members = tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                            for m in group.members.values())
        return JoinGroupResult(member.member_id, group.generation_id, group.protocol_type, group.protocol_name,
                               leader_id, members)

    #
    # Rebalance
    #

    def _maybe_prepare_rebalance(self, group: Group) -> None:
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: Group) -> None:
        """Enter PreparingRebalance: followers waiting for an assignment are told to rejoin, and the join
        deadline is armed (the initial delay for a group that was Empty, else the largest rebalance timeout)."""
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(group, errors.RebalanceInProgressError())
        group.pending_sync_members.clear()
        group.sync_timer = None
        rebalance_timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        was_empty = group.state is GroupState.EMPTY
        group.transition_to(GroupState.PREPARING_REBALANCE, self._clock.now_ms())
        if was_empty:
            delay = self._config.initial_rebalance_delay_ms
            self._arm_initial_join(group, delay, max(rebalance_timeout_ms - delay, 0))
        else:
            self._arm_join(group, rebalance_timeout_ms)
            self._maybe_complete_join(group)

    def _arm_join(self, group: Group, delay_ms: int) -> None:
        token = group.join_timer = self._deadlines.token()

        def expire() -> None:
            if self._groups.is_current(group) and group.join_timer == token:
                self._complete_join_phase(group)

        self._deadlines.arm_in(delay_ms, expire)

    def _arm_initial_join(self, group: Group, delay_ms: int, remaining_ms: int, start_ms: int | None = None) -> None:
        """Kafka's InitialDelayedJoin: wait `delay_ms`; while new members keep arriving, wait again, never
        beyond the rebalance timeout in total. It never completes early. Each wait starts when the previous
        one was due (`start_ms`), however late `expire_due` ran."""
        token = group.join_timer = self._deadlines.token()
        group.initial_join = True
        deadline = (self._clock.monotonic_ms() if start_ms is None else start_ms) + delay_ms

        def expire() -> None:
            if not self._groups.is_current(group) or group.join_timer != token:
                return
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                delay = min(self._config.initial_rebalance_delay_ms, remaining_ms)
                self._arm_initial_join(group, delay, max(remaining_ms - delay_ms, 0), deadline)
            else:
                self._complete_join_phase(group)

        self._deadlines.arm(deadline, expire)

    def _maybe_complete_join(self, group: Group) -> None:
        """Complete the join phase early once every member has rejoined (not during the initial delay)."""
        if group.state is GroupState.PREPARING_REBALANCE and not group.initial_join \
                and group.has_all_members_joined():
            self._complete_join_phase(group)

    def _complete_join_phase(self, group: Group) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, then start the next generation
        and answer every waiting JoinGroup (the leader gets the members)."""
        group.join_timer = None
        group.initial_join = False
        for member in list(group.members.values()):
            if member.join_future is None and member.group_instance_id is None:
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that did not rejoin are left: wait for them (or their session timeouts).
            rebalance_timeout_ms = max(m.rebalance_timeout_ms for m in group.members.values())
            self._arm_join(group, rebalance_timeout_ms)
            return
        group.init_next_generation(self._clock.now_ms())
        if group.state is GroupState.EMPTY:
            self._spawn(self._store_quietly(group, {}))
            return
        group.pending_sync_members = set(group.members)
        for member in group.members.values():
            member.complete_join(self._join_result(group, member))
            member.is_new = False
            self.schedule_heartbeat(group, member)
        self._arm_pending_sync(group)

    def _arm_pending_sync(self, group: Group) -> None:
        """Members that do not send SyncGroup within the rebalance timeout are removed (Kafka 3.2+)."""
        token = group.sync_timer = self._deadlines.token()
        generation_id = group.generation_id
        rebalance_timeout_ms = max(m.rebalance_timeout_ms for m in group.members.values())

        def expire() -> None:
            if not self._groups.is_current(group) or group.sync_timer != token or group.generation_id != generation_id:
                return
            if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and group.pending_sync_members:
                for member_id in list(group.pending_sync_members):
                    group.remove(member_id)
                self._prepare_rebalance(group)

        self._deadlines.arm_in(rebalance_timeout_ms, expire)

    def _reset_and_propagate_assignment_error(self, group: Group, error: errors.GroupError) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(error)

    def remove_member_and_update_group(self, group: Group, member: Member) -> None:
        # A member may be removed while its JoinGroup waits: tell it to rejoin with a fresh id.
        member.complete_join(errors.UnknownMemberIdError())
        member.complete_sync(errors.UnknownMemberIdError())
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    def _remove_pending_member_and_update_group(self, group: Group, member_id: str) -> None:
        group.pending_members.pop(member_id, None)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    #
    # SyncGroup
    #

    def sync(self, request: SyncGroupRequest, future: asyncio.Future[SyncGroupResult]) -> None:
        """SyncGroup: `future` is answered with the member's assignment once the leader's is stored; raises a
        `GroupError` to refuse."""
        if not request.group_id:
            raise errors.InvalidGroupIdError()
        group = self._groups.get(request.group_id)
        if group is None:
            raise errors.UnknownMemberIdError()
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or \
                (request.protocol_name is not None and request.protocol_name != group.protocol_name):
            raise errors.InconsistentGroupProtocolError()
        group.validate_current_member(request.member_id, request.group_instance_id)
        if request.generation_id != group.generation_id:
            raise errors.IllegalGenerationError()
        member = group.members[request.member_id]
        if group.state is GroupState.EMPTY:
            raise errors.UnknownMemberIdError()
        if group.state is GroupState.PREPARING_REBALANCE:
            raise errors.RebalanceInProgressError()
        group.pending_sync_members.discard(member.member_id)
        if group.state is GroupState.STABLE:
            self.schedule_heartbeat(group, member)
            future.set_result(SyncGroupResult(group.protocol_type, group.protocol_name, member.assignment))
            return
        # CompletingRebalance: wait for the leader's assignment to be stored.
        member.complete_sync(errors.RebalanceInProgressError())  # an older sync of the same member
        member.sync_future = future
        if member.member_id == group.leader_id:
            assignments = {m: request.assignments.get(m, b"") for m in group.members}
            self._spawn(self._store_assignment(group, group.generation_id, assignments))

    async def _store_assignment(self, group: Group, generation_id: int, assignments: dict[str, bytes]) -> None:
        try:
            await self._log.store_group(group, assignments)
            error = None
        except errors.AppendFailedError as exc:
            error = exc
        if not (self._groups.is_current(group) and group.state is GroupState.COMPLETING_REBALANCE
                and group.generation_id == generation_id):
            return  # the group moved on (a member left or joined) while the assignment was being written
        if error is not None:
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(group)
            return
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        group.transition_to(GroupState.STABLE, self._clock.now_ms())
        for member in group.members.values():
            if member.sync_future is not None:
                member.complete_sync(SyncGroupResult(group.protocol_type, group.protocol_name, member.assignment))
                self.schedule_heartbeat(group, member)

    #
    # Heartbeat, LeaveGroup
    #

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> None:
        """Keep the member's session alive; raises REBALANCE_IN_PROGRESS when it must rejoin."""
        if not group_id:
            raise errors.InvalidGroupIdError()
        group = self._groups.get(group_id)
        if group is None:
            raise errors.UnknownMemberIdError()
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        group.validate_current_member(member_id, group_instance_id)
        if generation_id != group.generation_id:
            raise errors.IllegalGenerationError()
        if group.state is GroupState.EMPTY:
            raise errors.UnknownMemberIdError()
        self.schedule_heartbeat(group, group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            raise errors.RebalanceInProgressError()

    def leave(self, group_id: str, members: list[LeavingMember]) -> list[str | None]:
        """Remove members; one error name (or None) per leaving member, in order."""
        if not group_id:
            raise errors.InvalidGroupIdError()
        group = self._groups.get(group_id)
        if group is None:
            return ["UNKNOWN_MEMBER_ID"] * len(members)
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        results: list[str | None] = []
        for leaving in members:
            if not leaving.member_id:
                instance_id = leaving.group_instance_id
                current = None if instance_id is None else group.static_members.get(instance_id)
                if current is None:
                    results.append("UNKNOWN_MEMBER_ID")
                    continue
                self.remove_member_and_update_group(group, group.members[current])
            elif leaving.member_id in group.pending_members:
                self._remove_pending_member_and_update_group(group, leaving.member_id)
            else:
                try:
                    group.validate_current_member(leaving.member_id, leaving.group_instance_id)
                except errors.GroupError as exc:
                    results.append(exc.kafka_error)
                    continue
                self.remove_member_and_update_group(group, group.members[leaving.member_id])
            results.append(None)
        return results

    #
    # Sessions and background writes
    #

    def schedule_heartbeat(self, group: Group, member: Member) -> None:
        """Kafka's completeAndScheduleNextHeartbeatExpiration: the member must be heard from again within its
        session timeout (a new member: within NEW_MEMBER_JOIN_TIMEOUT_MS)."""
        timeout = NEW_MEMBER_JOIN_TIMEOUT_MS if member.is_new else member.session_timeout_ms
        deadline = self._clock.monotonic_ms() + timeout
        member.heartbeat_deadline_ms = deadline
        member_id = member.member_id
        self._deadlines.arm(deadline, lambda: self._on_heartbeat_deadline(group, member_id, deadline))

    def _on_heartbeat_deadline(self, group: Group, member_id: str, deadline: int) -> None:
        member = group.members.get(member_id)
        if not self._groups.is_current(group) or member is None or member.heartbeat_deadline_ms != deadline:
            return
        # Members waiting for a rebalance to finish are kept alive by it (Kafka's hasSatisfiedHeartbeat).
        if not member.is_new and (member.join_future is not None or member.sync_future is not None):
            return
        logger.info("group %s: member %s session expired", group.group_id, member_id)
        self.remove_member_and_update_group(group, member)

    def _schedule_pending_member(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        deadline = self._clock.monotonic_ms() + session_timeout_ms
        group.pending_members[member_id] = deadline

        def expire() -> None:
            if self._groups.is_current(group) and group.pending_members.get(member_id) == deadline:
                self._remove_pending_member_and_update_group(group, member_id)

        self._deadlines.arm(deadline, expire)

    async def _store_quietly(self, group: Group, assignments: dict[str, bytes]) -> None:
        try:
            await self._log.store_group(group, assignments)
        except errors.AppendFailedError:
            logger.exception("group %s: failed to store group metadata", group.group_id)

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
