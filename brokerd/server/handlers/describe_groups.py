"""DescribeGroups v0-v5: each group's state, protocol and members (metadata and assignment while Stable);
an unknown group is Dead with no members. v3+ answers authorized operations when asked (without an
authorizer every group operation is allowed); v4+ names static members."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._authorized import GROUP_OPERATIONS, authorized
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


def _describe(group_id: str, context: RequestContext, operations) -> object:
    schema = context.response
    try:
        group = context.services.groups.coordinator_for(group_id).describe_group(group_id)
    except GroupError as exc:
        return schema.DescribedGroup(error_code=to_error_code(exc), group_id=group_id, group_state="",
                                     protocol_type="", protocol_data="", members=(), authorized_operations=operations)
    return schema.DescribedGroup(
        error_code=ErrorCode.none, group_id=group_id, group_state=group.state.value,
        protocol_type=group.protocol_type, protocol_data=group.protocol_name, authorized_operations=operations,
        members=tuple(schema.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                  client_id=m.client_id, client_host=m.client_host,
                                                  member_metadata=m.metadata, member_assignment=m.assignment)
                      for m in group.members))


async def handle(request, context: RequestContext) -> object:
    operations = authorized(getattr(request, "include_authorized_operations", False), GROUP_OPERATIONS)
    return context.response.DescribeGroupsResponse(
        throttle_time=_NO_THROTTLE, groups=tuple(_describe(g, context, operations) for g in request.groups))
