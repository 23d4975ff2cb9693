"""SyncGroup v3: the leader sends every member's assignment; each member parks until it is stored in
`__consumer_offsets` and gets its own."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.sync_group.v3.request import SyncGroupRequest
from kio.schema.sync_group.v3.response import SyncGroupResponse

from brokerd.groups import coordinator
from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: SyncGroupRequest, context: RequestContext) -> SyncGroupResponse:
    try:
        result = await context.services.groups.coordinator_for(request.group_id).sync_group(
            coordinator.SyncGroupRequest(
                group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
                group_instance_id=request.group_instance_id,
                assignments={a.member_id: a.assignment for a in request.assignments}))
    except GroupError as exc:
        return SyncGroupResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc), assignment=b"")
    return SyncGroupResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, assignment=result.assignment)
