"""Heartbeat v1: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v1.request import HeartbeatRequest
from kio.schema.heartbeat.v1.response import HeartbeatResponse

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: HeartbeatRequest, context: RequestContext) -> HeartbeatResponse:
    try:
        context.services.groups.coordinator_for(request.group_id).heartbeat(
            request.group_id, request.generation_id, request.member_id, None)
    except GroupError as exc:
        return HeartbeatResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc))
    return HeartbeatResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none)
