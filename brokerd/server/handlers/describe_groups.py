"""DescribeGroups v3: each group's state, protocol and members (metadata and assignment while Stable);
an unknown group is Dead with no members. Without an authorizer every group operation is allowed."""

import datetime

from kio.schema.describe_groups.v3.request import DescribeGroupsRequest
from kio.schema.describe_groups.v3.response import DescribedGroup, DescribedGroupMember, DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)
_NOT_REQUESTED = i32(-(2**31))
GROUP_OPERATIONS = i32((1 << 3) | (1 << 6) | (1 << 8))
"""Kafka's AclOperation bits a group supports: READ (3), DELETE (6), DESCRIBE (8)."""


def _describe(group_id: str, context: RequestContext, operations: i32) -> DescribedGroup:
    try:
        group = context.services.groups.coordinator_for(group_id).describe_group(group_id)
    except GroupError as exc:
        return DescribedGroup(error_code=to_error_code(exc), group_id=group_id, group_state="", protocol_type="",
                              protocol_data="", members=(), authorized_operations=operations)
    return DescribedGroup(
        error_code=ErrorCode.none, group_id=group_id, group_state=group.state.value,
        protocol_type=group.protocol_type, protocol_data=group.protocol_name, authorized_operations=operations,
        members=tuple(DescribedGroupMember(member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                                           member_metadata=m.metadata, member_assignment=m.assignment)
                      for m in group.members))


async def handle(request: DescribeGroupsRequest, context: RequestContext) -> DescribeGroupsResponse:
    operations = GROUP_OPERATIONS if request.include_authorized_operations else _NOT_REQUESTED
    return DescribeGroupsResponse(throttle_time=_NO_THROTTLE,
                                  groups=tuple(_describe(g, context, operations) for g in request.groups))
