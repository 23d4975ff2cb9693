"""The group coordinator's API types: what the group handlers pass `GroupCoordinator` (one frozen dataclass
per request kind), what it answers, and the group states it reports. Plain values: no behaviour, no I/O.

Times are milliseconds; member and group ids are the client's strings; an empty `member_id` means a member
the coordinator does not know yet.
"""

import enum
from dataclasses import dataclass

from brokerd.types import LeaderEpoch, Offset, TopicPartition


class GroupState(enum.Enum):
    """Kafka's classic group states; the values are the names DescribeGroups and ListGroups return."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


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
class JoinedMember:
    """A member as the leader sees it in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    """A successful JoinGroup. `members` is filled for the leader only (it computes the assignment)."""

    member_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str
    members: tuple[JoinedMember, ...] = ()


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
class SyncGroupResult:
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """LeaveGroup v3+ names members; an empty `member_id` with a `group_instance_id` removes that static
    member whatever its id (administrative removal)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetToCommit:
    offset: Offset
    metadata: str = ""
    leader_epoch: LeaderEpoch = LeaderEpoch(-1)


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
