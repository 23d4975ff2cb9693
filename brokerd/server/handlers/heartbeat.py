"""Heartbeat v0-v4: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin. v3+ names
static members (`group_instance_id`)."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request, context: RequestContext) -> object:
    try:
        context.services.groups.coordinator_for(request.group_id).heartbeat(
            request.group_id, request.generation_id, request.member_id, getattr(request, "group_instance_id", None))
    except GroupError as exc:
        return context.response.HeartbeatResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc))
    return context.response.HeartbeatResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none)
