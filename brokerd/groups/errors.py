"""Domain errors of the group coordinator; each names the Kafka error a client receives in `kafka_error`.

Errors that concern one item of a batched request (a partition of OffsetCommit, a member of LeaveGroup,
a group of DeleteGroups) are returned as these names in the result instead of being raised.
"""

from brokerd.errors import BrokerError


class GroupError(BrokerError):
    """Base class of the errors the coordinator raises or sets on a Join/Sync future."""


class CoordinatorNotAvailableError(GroupError):
    """The group is Dead (being deleted or unloaded) or its log is not writable right now."""

    kafka_error = "COORDINATOR_NOT_AVAILABLE"


class NotCoordinatorError(GroupError):
    """This broker no longer leads the group's `__consumer_offsets` partition (the coordinator was unloaded)."""

    kafka_error = "NOT_COORDINATOR"


class CoordinatorLoadInProgressError(GroupError):
    """The coordinator is still replaying its `__consumer_offsets` partition."""

    kafka_error = "COORDINATOR_LOAD_IN_PROGRESS"


class InvalidGroupIdError(GroupError):
    """An empty group id."""

    kafka_error = "INVALID_GROUP_ID"


class InvalidSessionTimeoutError(GroupError):
    """The session timeout is outside [group.min.session.timeout.ms, group.max.session.timeout.ms]."""

    kafka_error = "INVALID_SESSION_TIMEOUT"


class UnknownMemberIdError(GroupError):
    """The member id is not (or no longer) a member of the group: the client rejoins without it."""

    kafka_error = "UNKNOWN_MEMBER_ID"


class MemberIdRequiredError(GroupError):
    """JoinGroup v4+ from a new member: it must rejoin with `member_id`, which the coordinator now expects."""

    kafka_error = "MEMBER_ID_REQUIRED"

    def __init__(self, member_id: str) -> None:
        super().__init__(member_id)
        self.member_id = member_id


class IllegalGenerationError(GroupError):
    """The request names another generation than the group's current one."""

    kafka_error = "ILLEGAL_GENERATION"


class RebalanceInProgressError(GroupError):
    """The group is rebalancing: the member must (re)join before this request can succeed."""

    kafka_error = "REBALANCE_IN_PROGRESS"


class InconsistentGroupProtocolError(GroupError):
    """The protocol type differs from the group's, or no protocol is supported by every member."""

    kafka_error = "INCONSISTENT_GROUP_PROTOCOL"


class FencedInstanceIdError(GroupError):
    """The `group.instance.id` now belongs to another (newer) member id."""

    kafka_error = "FENCED_INSTANCE_ID"


class GroupMaxSizeReachedError(GroupError):
    """A new member would take the group past `group.max.size`."""

    kafka_error = "GROUP_MAX_SIZE_REACHED"


class GroupIdNotFoundError(GroupError):
    """The group does not exist here (or is being deleted)."""

    kafka_error = "GROUP_ID_NOT_FOUND"


class NonEmptyGroupError(GroupError):
    """The group still has members (DeleteGroups, and OffsetDelete of a non-consumer group)."""

    kafka_error = "NON_EMPTY_GROUP"


class AppendFailedError(GroupError):
    """Writing to `__consumer_offsets` failed; `kafka_error` is the error Kafka returns for that failure."""

    def __init__(self, kafka_error: str) -> None:
        super().__init__(kafka_error)
        self.kafka_error = kafka_error
