"""SyncGroup v0-v5: the leader sends every member's assignment; each member parks until it is stored in
`__consumer_offsets` and gets its own. v3+ static members; v5+ checks and answers the protocol type and
name (INCONSISTENT_GROUP_PROTOCOL on a mismatch)."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups import api
from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    try:
        result = await context.services.groups.coordinator_for(request.group_id).sync_group(
            api.SyncGroupRequest(
                group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
                group_instance_id=getattr(request, "group_instance_id", None),
                assignments={a.member_id: a.assignment for a in request.assignments},
                protocol_type=getattr(request, "protocol_type", None),
                protocol_name=getattr(request, "protocol_name", None)))
    except GroupError as exc:
        return schema.SyncGroupResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc), assignment=b"")
    return schema.SyncGroupResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none,
                                    protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                                    assignment=result.assignment)
