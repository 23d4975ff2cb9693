"""LeaveGroup v0-v5: v0-v2 name one member, whose error is the response's; v3+ name a batch of members
(`group_instance_id` for static ones; an empty member id removes a static member whatever its id) and get
one error each (KIP-345). v5's `reason` is only logged by Kafka and ignored here."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups.api import LeavingMember
from brokerd.groups.errors import GroupError
from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)
BATCHED_VERSION = 3


def _code(error: str | None) -> ErrorCode:
    return ErrorCode.none if error is None else error_code(error)


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    batched = context.version >= BATCHED_VERSION
    leaving = ([LeavingMember(m.member_id, m.group_instance_id) for m in request.members] if batched
               else [LeavingMember(request.member_id)])
    try:
        errors = context.services.groups.coordinator_for(request.group_id).leave_group(request.group_id, leaving)
    except GroupError as exc:
        return schema.LeaveGroupResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc), members=())
    if not batched:
        return schema.LeaveGroupResponse(throttle_time=_NO_THROTTLE, error_code=_code(errors[0]))
    return schema.LeaveGroupResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, members=tuple(
        schema.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=_code(e))
        for m, e in zip(leaving, errors, strict=True)))
