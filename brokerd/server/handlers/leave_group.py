"""LeaveGroup v1: one member leaves (v3+'s batched members are not advertised: every client's pinned
version is 1); its error, if any, is the response's."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.leave_group.v1.request import LeaveGroupRequest
from kio.schema.leave_group.v1.response import LeaveGroupResponse

from brokerd.groups.coordinator import LeavingMember
from brokerd.groups.errors import GroupError
from brokerd.protocol.errors import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: LeaveGroupRequest, context: RequestContext) -> LeaveGroupResponse:
    try:
        [error] = context.services.groups.coordinator_for(request.group_id).leave_group(
            request.group_id, [LeavingMember(request.member_id)])
    except GroupError as exc:
        return LeaveGroupResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc))
    return LeaveGroupResponse(throttle_time=_NO_THROTTLE,
                              error_code=ErrorCode.none if error is None else error_code(error))
