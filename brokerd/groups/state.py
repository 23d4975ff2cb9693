"""The classic group model: `Group`, `Member` and the legal transitions between `GroupState`s (Kafka's
`GroupMetadata`/`MemberMetadata`), and the group's stored form (`to_value`/`from_value`).

Called only from the event loop; not thread-safe. Times: `*_timestamp_ms` are wall-clock milliseconds
(`Clock.now_ms`, stored in `__consumer_offsets`); `*_deadline_ms` are monotonic milliseconds
(`Clock.monotonic_ms`, never stored).

Invariants kept here:
- `leader_id` is None iff `members` is empty, else one of `members`;
- `static_members` maps each static member's `group_instance_id` to its current `member_id`;
- `pending_sync_members` ⊆ `members` (members that have not sent SyncGroup since the join completed);
- a member is awaiting join iff `join_future` is set, awaiting sync iff `sync_future` is set.
"""

import asyncio
from dataclasses import dataclass, field
from typing import TypeVar

from brokerd.groups import errors
from brokerd.groups.api import GroupState, JoinGroupResult, SyncGroupResult
from brokerd.types import TopicPartition
from kafkaspec.consumer_offsets import GroupMetadataValue, MemberMetadataValue, OffsetCommitValue
from kafkaspec.consumer_protocol import subscription_topics

CONSUMER_PROTOCOL_TYPE = "consumer"
Outcome = TypeVar("Outcome")


# Kafka's `validPreviousStates`: state → the states it may be entered from.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


def _settle(future: asyncio.Future[Outcome] | None, outcome: Outcome | errors.GroupError) -> None:
    """Answer a parked JoinGroup/SyncGroup (a result, or the error it fails with) unless already answered."""
    if future is None or future.done():
        return
    if isinstance(outcome, errors.GroupError):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


@dataclass(eq=False, slots=True)
class Member:
    """One member. `protocols` keeps the member's preference order; `assignment` is from the last sync."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    is_new: bool = False
    heartbeat_deadline_ms: int | None = None
    join_future: asyncio.Future[JoinGroupResult] | None = None
    sync_future: asyncio.Future[SyncGroupResult] | None = None

    def metadata(self, protocol_name: str) -> bytes:
        return dict(self.protocols)[protocol_name]

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        return self.protocols == protocols

    def complete_join(self, outcome: JoinGroupResult | errors.GroupError) -> None:
        """Answer the member's parked JoinGroup, if any; it is no longer awaiting join."""
        future, self.join_future = self.join_future, None
        _settle(future, outcome)

    def complete_sync(self, outcome: SyncGroupResult | errors.GroupError) -> None:
        """Answer the member's parked SyncGroup, if any; it is no longer awaiting sync."""
        future, self.sync_future = self.sync_future, None
        _settle(future, outcome)


@dataclass(eq=False)
class Group:
    """One group's membership, generation and committed offsets."""

    group_id: str
    state: GroupState
    state_timestamp_ms: int | None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # member id → heartbeat deadline (ms)
    pending_sync_members: set[str] = field(default_factory=set)
    subscribed_topics: frozenset[str] | None = None
    offsets: dict[TopicPartition, OffsetCommitValue] = field(default_factory=dict)
    pending_offset_commits: dict[TopicPartition, int] = field(default_factory=dict)  # partition → commits in flight
    new_member_added: bool = False  # a member joined during the initial rebalance delay
    initial_join: bool = False  # the armed join deadline is the initial delay (never completes early)
    join_timer: int | None = None  # token of the armed rebalance (join) deadline
    sync_timer: int | None = None  # token of the armed pending-sync deadline

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise AssertionError(f"group {self.group_id}: illegal transition {self.state.value} → {state.value}")
        self.state = state
        self.state_timestamp_ms = now_ms

    #
    # Membership
    #

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None \
                and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync_members.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """Give the static member a new member id (it restarted); the old id is fenced from now on."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return member

    def validate_current_member(self, member_id: str, group_instance_id: str | None) -> None:
        """Kafka's validateCurrentMember: a static member must use the id its instance now holds
        (FENCED_INSTANCE_ID), any other must be a member (UNKNOWN_MEMBER_ID)."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                raise errors.UnknownMemberIdError()
            if current != member_id:
                raise errors.FencedInstanceIdError()
        elif member_id not in self.members:
            raise errors.UnknownMemberIdError()

    def awaiting_join(self) -> list[Member]:
        return [m for m in self.members.values() if m.join_future is not None]

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.join_future is not None for m in self.members.values())

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick any member that did; False if none did (or no leader)."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].join_future is not None:
            return True
        joined = self.awaiting_join()
        if not joined:
            return False
        self.leader_id = joined[0].member_id
        return True

    #
    # Protocols
    #

    def _protocol_support(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for member in self.members.values():
            for name, _ in member.protocols:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def supports_protocols(self, protocol_type: str, protocol_names: list[str]) -> bool:
        """Kafka's rule: an Empty group accepts any non-empty type and protocol list; otherwise the type must
        be the group's and one of the protocols must be supported by every current member."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocol_names)
        support = self._protocol_support()
        return self.protocol_type == protocol_type and any(
            support.get(name, 0) == len(self.members) for name in protocol_names)

    def select_protocol(self) -> str:
        """The protocol every member supports that most members list first among those (a vote); ties go to
        the candidate voted for first, in member join order."""
        support = self._protocol_support()
        candidates = {name for name, count in support.items() if count == len(self.members)}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(name for name, _ in member.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        """Join complete: bump the generation, pick the protocol; CompletingRebalance, or Empty if no members."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.subscribed_topics = self.compute_subscribed_topics()

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics of the consumer-protocol subscriptions; None when unknown (another protocol, or a
        subscription that does not parse)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        return self.subscribed_topics is None or topic in self.subscribed_topics

    #
    # Persistence
    #

    def to_value(self, assignments: dict[str, bytes]) -> GroupMetadataValue:
        """The GroupMetadataValue Kafka stores for this generation with `assignments` (member id → bytes)."""
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation_id=self.generation_id,
            protocol_name=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp_ms=-1 if self.state_timestamp_ms is None else self.state_timestamp_ms,
            members=tuple(
                MemberMetadataValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout_ms, m.session_timeout_ms,
                                    m.metadata(self.protocol_name) if self.protocol_name is not None else b"",
                                    assignments.get(m.member_id, b""))
                for m in self.members.values()),
        )

    @classmethod
    def from_value(cls, group_id: str, value: GroupMetadataValue | None) -> "Group":
        """A group as loaded from its stored metadata: Stable at its stored generation if it has members,
        else Empty (no metadata: an Empty group that only has offsets). Sessions are the caller's to arm."""
        if value is None:
            return cls(group_id, GroupState.EMPTY, None)
        group = cls(group_id, GroupState.STABLE if value.members else GroupState.EMPTY,
                    None if value.current_state_timestamp_ms == -1 else value.current_state_timestamp_ms,
                    generation_id=value.generation_id, protocol_type=value.protocol_type,
                    protocol_name=value.protocol_name)
        for stored in value.members:
            group.add(Member(stored.member_id, stored.group_instance_id, stored.client_id, stored.client_host,
                             stored.rebalance_timeout_ms, stored.session_timeout_ms, value.protocol_type,
                             ((value.protocol_name or "", stored.subscription),), stored.assignment))
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    #
    # Offsets expiry
    #

    def expired_offsets(self, now_ms: int, retention_ms: int) -> list[TopicPartition]:
        """Kafka 3.x's `removeExpiredOffsets` rule, without removing anything:

        - Empty group with a protocol type: retention counts from when the group became Empty (from the
          commit when that time is unknown);
        - Stable consumer group with known subscriptions: offsets of topics it no longer subscribes to,
          counting from their commit;
        - no protocol type (only ever committed offsets, "simple" consumers): counting from the commit;
        - otherwise nothing expires. A v1 offset with an explicit expire timestamp expires at that time.
        Partitions with a commit in flight never expire.
        """
        if self.protocol_type is not None and self.state is GroupState.EMPTY:
            subscribed: frozenset[str] = frozenset()
            use_state_timestamp = self.state_timestamp_ms is not None
        elif (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
              and self.state is GroupState.STABLE):
            subscribed, use_state_timestamp = self.subscribed_topics, False
        elif self.protocol_type is None:
            subscribed, use_state_timestamp = frozenset(), False
        else:
            return []
        expired = []
        for tp, value in self.offsets.items():
            if tp[0] in subscribed or tp in self.pending_offset_commits:
                continue
            if value.expire_timestamp_ms != -1:
                if now_ms >= value.expire_timestamp_ms:
                    expired.append(tp)
                continue
            base_ms = self.state_timestamp_ms if use_state_timestamp else value.commit_timestamp_ms
            if now_ms - base_ms >= retention_ms:
                expired.append(tp)
        return expired



class GroupTable(dict[str, Group]):
    """One coordinator's groups by id, shared by its concerns (membership, offsets)."""

    def is_current(self, group: Group) -> bool:
        """Whether `group` is still the group of its id here (not deleted, unloaded or replaced meanwhile):
        a write or deadline that completes later applies only then."""
        return self.get(group.group_id) is group
