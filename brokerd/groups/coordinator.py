"""The classic group coordinator of one `__consumer_offsets` partition (Kafka's `GroupCoordinator` +
`GroupMetadataManager` for the groups that hash to that partition).

Sans-IO: time comes from the injected `Clock`, and every write goes through the injected `append(records)`
coroutine (to the partition's replicated log), which returns once the records are durable and raises a
`BrokerError` otherwise. Called only from the event loop; not thread-safe.

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
import heapq
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from brokerd.clock import Clock
from brokerd.config import GroupSettings
from brokerd.groups import errors
from brokerd.groups.state import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    GroupState,
    JoinedMember,
    JoinGroupResult,
    Member,
    SyncGroupResult,
    TopicPartition,
)
from kafkaspec.consumer_offsets import (
    NO_EXPIRE_TIMESTAMP,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_record,
    encode_key,
    encode_value,
)

logger = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]
"""A `__consumer_offsets` record: key and value bytes (value None: a tombstone)."""

Append = Callable[[list[Record]], Awaitable[None]]

_Request = TypeVar("_Request")
_Result = TypeVar("_Result")

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    """`member_id` is "" for a new member; `require_known_member_id` is True for JoinGroup v4+ (KIP-394)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = True


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    """`assignments` (member id → assignment) is sent by the leader only; `protocol_type`/`protocol_name`
    are checked when given (SyncGroup v5+)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: dict[str, bytes]
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """LeaveGroup v3+ names members; an empty `member_id` with a `group_instance_id` removes that static
    member whatever its id (administrative removal)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetToCommit:
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    """`generation_id` -1 with an empty `member_id` is a "simple" commit, allowed only for Empty groups.
    `retention_time_ms` -1 uses the broker's retention (OffsetCommit v2-v4 may set it)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: dict[TopicPartition, OffsetToCommit]
    retention_time_ms: int = -1


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """DescribeGroups' view: metadata and assignments are shown only for a Stable group (as Kafka)."""

    group_id: str
    state: GroupState
    protocol_type: str
    protocol_name: str
    members: tuple[MemberDescription, ...]


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: GroupState


# Kafka's error translation for a failed append (GroupMetadataManager.storeGroup / storeOffsets).
_APPEND_ERRORS = {
    "UNKNOWN_TOPIC_OR_PARTITION": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "COORDINATOR_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT": "COORDINATOR_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER": "NOT_COORDINATOR",
    "KAFKA_STORAGE_ERROR": "NOT_COORDINATOR",
}
_TOO_LARGE = frozenset({"MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_FETCH_SIZE"})


def _append_error(exc: BaseException, *, offsets: bool) -> errors.AppendFailedError:
    name = getattr(exc, "kafka_error", "UNKNOWN_SERVER_ERROR")
    if name in _TOO_LARGE:
        return errors.AppendFailedError("INVALID_COMMIT_OFFSET_SIZE" if offsets else "UNKNOWN_SERVER_ERROR")
    return errors.AppendFailedError(_APPEND_ERRORS.get(name, name))


class GroupCoordinator:
    """Groups of one `__consumer_offsets` partition: membership, rebalances and committed offsets."""

    def __init__(self, *, clock: Clock, append: Append, config: GroupSettings | None = None,
                 on_deadline: Callable[[int], None] | None = None) -> None:
        """`on_deadline(deadline_ms)` is told of every deadline armed (the broker's timer may need to wake
        earlier than it planned)."""
        self._clock = clock
        self._append = append
        self._config = config or GroupSettings()
        self._on_deadline = on_deadline
        self._groups: dict[str, Group] = {}
        self._loaded = False
        self._unloaded = False
        self._deadlines: list[tuple[int, int, Callable[[], None]]] = []
        self._sequence = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()

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
        offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}
        metadata: dict[str, GroupMetadataValue] = {}
        for raw_key, raw_value in records:
            try:
                key, value = decode_record(raw_key, raw_value)
            except SchemaError as exc:
                logger.warning("skipping an unreadable __consumer_offsets record (key %r): %s", raw_key[:64], exc)
                continue
            if isinstance(key, OffsetCommitKey):
                group_offsets = offsets.setdefault(key.group_id, {})
                if value is None:
                    group_offsets.pop((key.topic, key.partition), None)
                else:
                    assert isinstance(value, OffsetCommitValue)
                    group_offsets[(key.topic, key.partition)] = value
            elif value is None:
                metadata.pop(key.group_id, None)
            else:
                assert isinstance(value, GroupMetadataValue)
                metadata[key.group_id] = value
        for group_id in metadata.keys() | {g for g, o in offsets.items() if o}:
            group = self._group_from_value(group_id, metadata.get(group_id))
            group.offsets = offsets.get(group_id, {})
            self._groups[group_id] = group
        self._loaded = True

    def _group_from_value(self, group_id: str, value: GroupMetadataValue | None) -> Group:
        if value is None:
            return Group(group_id, GroupState.EMPTY, None)
        group = Group(group_id, GroupState.STABLE if value.members else GroupState.EMPTY,
                      None if value.current_state_timestamp_ms == -1 else value.current_state_timestamp_ms,
                      generation_id=value.generation_id, protocol_type=value.protocol_type,
                      protocol_name=value.protocol_name)
        for stored in value.members:
            group.add(Member(stored.member_id, stored.group_instance_id, stored.client_id, stored.client_host,
                             stored.rebalance_timeout_ms, stored.session_timeout_ms, value.protocol_type,
                             ((value.protocol_name or "", stored.subscription),), stored.assignment))
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.subscribed_topics = group.compute_subscribed_topics()
        for member in group.members.values():
            self._schedule_heartbeat(group, member)
        return group

    def unload(self) -> None:
        """Leadership moved away: fail waiting Join/Sync futures with NOT_COORDINATOR and stop serving."""
        self._unloaded = True
        for group in self._groups.values():
            for member in group.members.values():
                self._complete_join(member, errors.NotCoordinatorError())
                self._complete_sync(member, errors.NotCoordinatorError())
            group.state = GroupState.DEAD
        self._groups.clear()
        self._deadlines.clear()

    def _check_serving(self) -> None:
        if self._unloaded:
            raise errors.NotCoordinatorError()
        if not self._loaded:
            raise errors.CoordinatorLoadInProgressError()

    #
    # Deadlines
    #

    def next_deadline_ms(self) -> int | None:
        """The earliest armed deadline (monotonic ms), or None."""
        return self._deadlines[0][0] if self._deadlines else None

    def expire_due(self) -> None:
        """Run every deadline at or before `clock.monotonic_ms()` (stale ones are no-ops)."""
        now = self._clock.monotonic_ms()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, action = heapq.heappop(self._deadlines)
            action()

    def _arm(self, deadline_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._deadlines, (deadline_ms, next(self._sequence), action))
        if self._on_deadline is not None:
            self._on_deadline(deadline_ms)

    def _is_current(self, group: Group) -> bool:
        return self._groups.get(group.group_id) is group

    def _schedule_heartbeat(self, group: Group, member: Member) -> None:
        """Kafka's completeAndScheduleNextHeartbeatExpiration: the member must be heard from again within its
        session timeout (a new member: within NEW_MEMBER_JOIN_TIMEOUT_MS)."""
        timeout = NEW_MEMBER_JOIN_TIMEOUT_MS if member.is_new else member.session_timeout_ms
        deadline = self._clock.monotonic_ms() + timeout
        member.heartbeat_deadline_ms = deadline
        member_id = member.member_id
        self._arm(deadline, lambda: self._on_heartbeat_deadline(group, member_id, deadline))

    def _on_heartbeat_deadline(self, group: Group, member_id: str, deadline: int) -> None:
        member = group.members.get(member_id)
        if not self._is_current(group) or member is None or member.heartbeat_deadline_ms != deadline:
            return
        # Members waiting for a rebalance to finish are kept alive by it (Kafka's hasSatisfiedHeartbeat).
        if not member.is_new and (member.join_future is not None or member.sync_future is not None):
            return
        logger.info("group %s: member %s session expired", group.group_id, member_id)
        self._remove_member_and_update_group(group, member)

    def _schedule_pending_member(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        deadline = self._clock.monotonic_ms() + session_timeout_ms
        group.pending_members[member_id] = deadline

        def expire() -> None:
            if self._is_current(group) and group.pending_members.get(member_id) == deadline:
                self._remove_pending_member_and_update_group(group, member_id)

        self._arm(deadline, expire)

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

    #
    # JoinGroup
    #

    def join_group(self, request: JoinGroupRequest) -> asyncio.Future[JoinGroupResult]:
        """A future resolved when this member's join completes (or fails, as a `GroupError`)."""
        return self._answer_later(self._join_group, request)

    def _join_group(self, request: JoinGroupRequest, future: asyncio.Future[JoinGroupResult]) -> None:
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
        self._complete_join(old, errors.FencedInstanceIdError())
        self._complete_sync(old, errors.FencedInstanceIdError())
        saved = (old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(request.group_instance_id, old_member_id, member_id)
        self._update_member(member, request)
        self._schedule_heartbeat(group, member)
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
            await self._append_group(group, assignments)
        except errors.AppendFailedError:
            if self._is_current(group) and member.member_id in group.members:
                new_member_id = member.member_id
                assert member.group_instance_id is not None
                group.replace_static_member(member.group_instance_id, new_member_id, old_member_id)
                member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = saved
            self._complete_join(member, errors.UnknownMemberIdError())
            return
        self._complete_join(member, JoinGroupResult(
            member.member_id, generation_id, group.protocol_type, group.protocol_name, leader_id))

    def _join_known_member(self, group: Group, request: JoinGroupRequest,
                           future: asyncio.Future[JoinGroupResult]) -> None:
        if request.member_id in group.pending_members:
            if request.group_instance_id is not None:
                raise errors.UnknownMemberIdError()
            del group.pending_members[request.member_id]
            self._add_member_and_rebalance(group, request, request.member_id, future)
            return
        self._validate_current_member(group, request.member_id, request.group_instance_id)
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

    def _validate_current_member(self, group: Group, member_id: str, group_instance_id: str | None) -> None:
        """Kafka's validateCurrentMember: a static member must use the id its instance now holds."""
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                raise errors.UnknownMemberIdError()
            if current != member_id:
                raise errors.FencedInstanceIdError()
        elif member_id not in group.members:
            raise errors.UnknownMemberIdError()

    def _add_member_and_rebalance(self, group: Group, request: JoinGroupRequest, member_id: str,
                                  future: asyncio.Future[JoinGroupResult]) -> None:
        member = Member(member_id, request.group_instance_id, request.client_id, request.client_host,
                        request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
                        request.protocols, is_new=True, join_future=future)
        group.add(member)
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        self._schedule_heartbeat(group, member)
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
        self._complete_join(member, errors.RebalanceInProgressError())  # an older join of the same member
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
        token = group.join_timer = next(self._sequence)

        def expire() -> None:
            if self._is_current(group) and group.join_timer == token:
                self._complete_join_phase(group)

        self._arm(self._clock.monotonic_ms() + delay_ms, expire)

    def _arm_initial_join(self, group: Group, delay_ms: int, remaining_ms: int, start_ms: int | None = None) -> None:
        """Kafka's InitialDelayedJoin: wait `delay_ms`; while new members keep arriving, wait again, never
        beyond the rebalance timeout in total. It never completes early. Each wait starts when the previous
        one was due (`start_ms`), however late `expire_due` ran."""
        token = group.join_timer = next(self._sequence)
        group.initial_join = True
        deadline = (self._clock.monotonic_ms() if start_ms is None else start_ms) + delay_ms

        def expire() -> None:
            if not self._is_current(group) or group.join_timer != token:
                return
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                delay = min(self._config.initial_rebalance_delay_ms, remaining_ms)
                self._arm_initial_join(group, delay, max(remaining_ms - delay_ms, 0), deadline)
            else:
                self._complete_join_phase(group)

        self._arm(deadline, expire)

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
            self._complete_join(member, self._join_result(group, member))
            member.is_new = False
            self._schedule_heartbeat(group, member)
        self._arm_pending_sync(group)

    def _arm_pending_sync(self, group: Group) -> None:
        """Members that do not send SyncGroup within the rebalance timeout are removed (Kafka 3.2+)."""
        token = group.sync_timer = next(self._sequence)
        generation_id = group.generation_id
        rebalance_timeout_ms = max(m.rebalance_timeout_ms for m in group.members.values())

        def expire() -> None:
            if not self._is_current(group) or group.sync_timer != token or group.generation_id != generation_id:
                return
            if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and group.pending_sync_members:
                for member_id in list(group.pending_sync_members):
                    group.remove(member_id)
                self._prepare_rebalance(group)

        self._arm(self._clock.monotonic_ms() + rebalance_timeout_ms, expire)

    def _reset_and_propagate_assignment_error(self, group: Group, error: errors.GroupError) -> None:
        for member in group.members.values():
            member.assignment = b""
            self._complete_sync(member, error)

    def _remove_member_and_update_group(self, group: Group, member: Member) -> None:
        # A member may be removed while its JoinGroup waits: tell it to rejoin with a fresh id.
        self._complete_join(member, errors.UnknownMemberIdError())
        self._complete_sync(member, errors.UnknownMemberIdError())
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    def _remove_pending_member_and_update_group(self, group: Group, member_id: str) -> None:
        group.pending_members.pop(member_id, None)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    @staticmethod
    def _complete_join(member: Member, outcome: JoinGroupResult | errors.GroupError) -> None:
        future, member.join_future = member.join_future, None
        if future is None or future.done():
            return
        if isinstance(outcome, errors.GroupError):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    @staticmethod
    def _complete_sync(member: Member, outcome: SyncGroupResult | errors.GroupError) -> None:
        future, member.sync_future = member.sync_future, None
        if future is None or future.done():
            return
        if isinstance(outcome, errors.GroupError):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    #
    # SyncGroup
    #

    def sync_group(self, request: SyncGroupRequest) -> asyncio.Future[SyncGroupResult]:
        """A future resolved with this member's assignment once the leader's assignment is stored."""
        return self._answer_later(self._sync_group, request)

    def _sync_group(self, request: SyncGroupRequest, future: asyncio.Future[SyncGroupResult]) -> None:
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
        self._validate_current_member(group, request.member_id, request.group_instance_id)
        if request.generation_id != group.generation_id:
            raise errors.IllegalGenerationError()
        member = group.members[request.member_id]
        if group.state is GroupState.EMPTY:
            raise errors.UnknownMemberIdError()
        if group.state is GroupState.PREPARING_REBALANCE:
            raise errors.RebalanceInProgressError()
        group.pending_sync_members.discard(member.member_id)
        if group.state is GroupState.STABLE:
            self._schedule_heartbeat(group, member)
            future.set_result(SyncGroupResult(group.protocol_type, group.protocol_name, member.assignment))
            return
        # CompletingRebalance: wait for the leader's assignment to be stored.
        self._complete_sync(member, errors.RebalanceInProgressError())  # an older sync of the same member
        member.sync_future = future
        if member.member_id == group.leader_id:
            assignments = {m: request.assignments.get(m, b"") for m in group.members}
            self._spawn(self._store_assignment(group, group.generation_id, assignments))

    async def _store_assignment(self, group: Group, generation_id: int, assignments: dict[str, bytes]) -> None:
        try:
            await self._append_group(group, assignments)
            error = None
        except errors.AppendFailedError as exc:
            error = exc
        if not (self._is_current(group) and group.state is GroupState.COMPLETING_REBALANCE
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
                self._complete_sync(member, SyncGroupResult(group.protocol_type, group.protocol_name,
                                                            member.assignment))
                self._schedule_heartbeat(group, member)

    #
    # Heartbeat, LeaveGroup
    #

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> None:
        """Keep the member's session alive; raises REBALANCE_IN_PROGRESS when it must rejoin."""
        self._check_serving()
        if not group_id:
            raise errors.InvalidGroupIdError()
        group = self._groups.get(group_id)
        if group is None:
            raise errors.UnknownMemberIdError()
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        self._validate_current_member(group, member_id, group_instance_id)
        if generation_id != group.generation_id:
            raise errors.IllegalGenerationError()
        if group.state is GroupState.EMPTY:
            raise errors.UnknownMemberIdError()
        self._schedule_heartbeat(group, group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            raise errors.RebalanceInProgressError()

    def leave_group(self, group_id: str, members: list[LeavingMember]) -> list[str | None]:
        """Remove members; one error name (or None) per leaving member, in order."""
        self._check_serving()
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
                self._remove_member_and_update_group(group, group.members[current])
            elif leaving.member_id in group.pending_members:
                self._remove_pending_member_and_update_group(group, leaving.member_id)
            else:
                try:
                    self._validate_current_member(group, leaving.member_id, leaving.group_instance_id)
                except errors.GroupError as exc:
                    results.append(exc.kafka_error)
                    continue
                self._remove_member_and_update_group(group, group.members[leaving.member_id])
            results.append(None)
        return results

    #
    # DescribeGroups, ListGroups, DeleteGroups
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

    async def delete_groups(self, group_ids: list[str]) -> dict[str, str | None]:
        """Delete Empty groups with their offsets (tombstones); NON_EMPTY_GROUP for groups with members."""
        self._check_serving()
        results: dict[str, str | None] = {}
        deleted = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None or group.state is GroupState.DEAD:
                results[group_id] = "GROUP_ID_NOT_FOUND"
            elif group.state is not GroupState.EMPTY:
                results[group_id] = "NON_EMPTY_GROUP"
            else:
                group.transition_to(GroupState.DEAD, self._clock.now_ms())
                deleted.append(group)
                results[group_id] = None
        records: list[Record] = []
        for group in deleted:
            records += self._remove_offsets(group, list(group.offsets))
            records += self._maybe_remove_dead_group(group)
        await self._append_tombstones(records)
        return results

    #
    # Offsets
    #

    async def commit_offsets(self, request: OffsetCommitRequest) -> dict[TopicPartition, str | None]:
        """Validate and store offsets; one error name (or None) per partition. Group-level failures raise."""
        self._check_serving()
        group = self._groups.get(request.group_id)
        if group is None:
            if request.generation_id >= 0:
                raise errors.IllegalGenerationError()  # a member of a group that no longer exists
            group = Group(request.group_id, GroupState.EMPTY, self._clock.now_ms())
            self._groups[request.group_id] = group
        self._validate_offset_commit(group, request)
        if group.state is GroupState.COMPLETING_REBALANCE:
            raise errors.RebalanceInProgressError()
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._schedule_heartbeat(group, group.members[request.member_id])
        now = self._clock.now_ms()
        expire = NO_EXPIRE_TIMESTAMP if request.retention_time_ms == -1 else now + request.retention_time_ms
        results: dict[TopicPartition, str | None] = {}
        accepted: dict[TopicPartition, OffsetCommitValue] = {}
        for tp, commit in request.offsets.items():
            if len(commit.metadata.encode()) > self._config.offset_metadata_max_bytes:
                results[tp] = "OFFSET_METADATA_TOO_LARGE"
            else:
                accepted[tp] = OffsetCommitValue(commit.offset, commit.metadata, now, commit.leader_epoch, expire)
                results[tp] = None
        if not accepted:
            return results
        records = [(encode_key(OffsetCommitKey(group.group_id, t, p)), encode_value(v)) for (t, p), v in
                   accepted.items()]
        for tp in accepted:
            group.pending_offset_commits[tp] = group.pending_offset_commits.get(tp, 0) + 1
        try:
            await self._append(records)
            error = None
        except Exception as exc:  # any append failure is reported to the client
            error = _append_error(exc, offsets=True).kafka_error
        finally:
            for tp in accepted:
                group.pending_offset_commits[tp] -= 1
                if not group.pending_offset_commits[tp]:
                    del group.pending_offset_commits[tp]
        if error is not None:
            return {tp: error if tp in accepted else result for tp, result in results.items()}
        if self._is_current(group):
            group.offsets.update(accepted)
        return results

    def _validate_offset_commit(self, group: Group, request: OffsetCommitRequest) -> None:
        """Kafka's validateOffsetCommit: members must match the generation; anonymous commits only while Empty."""
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        if request.generation_id >= 0 or request.member_id or request.group_instance_id is not None:
            self._validate_current_member(group, request.member_id, request.group_instance_id)
            if request.generation_id != group.generation_id:
                raise errors.IllegalGenerationError()
        elif group.state is not GroupState.EMPTY:
            raise errors.UnknownMemberIdError()

    def fetch_offsets(self, group_id: str,
                      partitions: list[TopicPartition] | None) -> dict[TopicPartition, OffsetCommitValue | None]:
        """Committed offsets of `partitions` (None: every committed partition); None where nothing is
        committed (the handler answers offset -1, metadata "")."""
        self._check_serving()
        group = self._groups.get(group_id)
        offsets = {} if group is None or group.state is GroupState.DEAD else group.offsets
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> dict[TopicPartition, str | None]:
        """OffsetDelete: allowed for an Empty group, or for topics a consumer group does not subscribe to."""
        self._check_serving()
        group = self._groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            raise errors.GroupIdNotFoundError()
        results: dict[TopicPartition, str | None] = {}
        if group.state is GroupState.EMPTY:
            eligible = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = [tp for tp in partitions if not group.is_subscribed_to(tp[0])]
            results.update({tp: "GROUP_SUBSCRIBED_TO_TOPIC" for tp in partitions if group.is_subscribed_to(tp[0])})
        else:
            raise errors.NonEmptyGroupError()
        records = self._remove_offsets(group, eligible) + self._maybe_remove_dead_group(group)
        results.update({tp: None for tp in eligible})
        await self._append_tombstones(records)
        return results

    async def remove_expired_offsets(self) -> int:
        """Apply `offsets.retention.minutes` (see `Group.expired_offsets`); Empty groups left without offsets
        are deleted. Returns the number of offsets removed."""
        self._check_serving()
        now = self._clock.now_ms()
        records: list[Record] = []
        removed = 0
        for group in list(self._groups.values()):
            expired = group.expired_offsets(now, self._config.offsets_retention_ms)
            removed += len(expired)
            records += self._remove_offsets(group, expired)
            records += self._maybe_remove_dead_group(group)
        await self._append_tombstones(records)
        return removed

    def _remove_offsets(self, group: Group, partitions: list[TopicPartition]) -> list[Record]:
        records: list[Record] = []
        for topic, partition in partitions:
            if group.offsets.pop((topic, partition), None) is not None:
                records.append((encode_key(OffsetCommitKey(group.group_id, topic, partition)), None))
        return records

    def _maybe_remove_dead_group(self, group: Group) -> list[Record]:
        """Kafka's cleanupGroupMetadata tail: an Empty group without offsets dies; its metadata gets a
        tombstone unless it never had a generation (offsets-only groups store no metadata)."""
        if group.state is GroupState.EMPTY and not group.offsets:
            group.transition_to(GroupState.DEAD, self._clock.now_ms())
        if group.state is not GroupState.DEAD or not self._is_current(group):
            return []
        del self._groups[group.group_id]
        if group.generation_id > 0:
            return [(encode_key(GroupMetadataKey(group.group_id)), None)]
        return []

    async def _append_tombstones(self, records: list[Record]) -> None:
        """Deletions are applied in memory first; like Kafka, a failed tombstone write is logged, not returned."""
        if not records:
            return
        try:
            await self._append(records)
        except Exception:
            logger.exception("failed to write %d tombstones to __consumer_offsets", len(records))

    #
    # Group metadata persistence
    #

    async def _append_group(self, group: Group, assignments: dict[str, bytes]) -> None:
        record = (encode_key(GroupMetadataKey(group.group_id)), encode_value(group.to_value(assignments)))
        try:
            await self._append([record])
        except Exception as exc:
            raise _append_error(exc, offsets=False) from exc

    async def _store_quietly(self, group: Group, assignments: dict[str, bytes]) -> None:
        try:
            await self._append_group(group, assignments)
        except errors.AppendFailedError:
            logger.exception("group %s: failed to store group metadata", group.group_id)

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
