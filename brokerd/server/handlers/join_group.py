"""JoinGroup v5: parks until the group's join phase completes (all members joined, or the rebalance
timeout); a new member first gets MEMBER_ID_REQUIRED with the id to rejoin with (KIP-394)."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.join_group.v5.request import JoinGroupRequest
from kio.schema.join_group.v5.response import JoinGroupResponse, JoinGroupResponseMember
from kio.static.primitive import i32

from brokerd.groups import coordinator
from brokerd.groups.errors import GroupError, MemberIdRequiredError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.handlers._groups import client_host, milliseconds

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: JoinGroupRequest, context: RequestContext) -> JoinGroupResponse:
    try:
        result = await context.services.groups.coordinator_for(request.group_id).join_group(
            coordinator.JoinGroupRequest(
                group_id=request.group_id, member_id=request.member_id,
                group_instance_id=request.group_instance_id, client_id=context.header.client_id or "",
                client_host=client_host(context), session_timeout_ms=milliseconds(request.session_timeout),
                rebalance_timeout_ms=milliseconds(request.rebalance_timeout), protocol_type=request.protocol_type,
                protocols=tuple((p.name, p.metadata) for p in request.protocols), require_known_member_id=True))
    except GroupError as exc:
        member_id = exc.member_id if isinstance(exc, MemberIdRequiredError) else request.member_id
        return JoinGroupResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc), generation_id=i32(-1),
                                 protocol_name="", leader="", member_id=member_id, members=())
    return JoinGroupResponse(
        throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, generation_id=i32(result.generation_id),
        protocol_name=result.protocol_name or "", leader=result.leader_id, member_id=result.member_id,
        members=tuple(JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                              metadata=m.metadata) for m in result.members))
