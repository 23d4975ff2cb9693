"""JoinGroup v0-v9: parks until the group's join phase completes (all members joined, or the rebalance
timeout).

Per-version meaning: v0 has no rebalance timeout (the session timeout serves as one, as in Kafka); v4+
members join twice, first getting MEMBER_ID_REQUIRED with the id to rejoin with (KIP-394), older ones
get their id at once; v5+ static members (`group_instance_id`); v7+ answers the protocol type; v8's
`reason` is only logged by Kafka and ignored here; v9's `skip_assignment` is always false (no
server-side assignors).
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from brokerd.groups import api
from brokerd.groups.errors import GroupError, MemberIdRequiredError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.handlers._groups import client_host, milliseconds

_NO_THROTTLE = datetime.timedelta(0)
KNOWN_MEMBER_ID_VERSION = 4


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    session_timeout_ms = milliseconds(request.session_timeout)
    rebalance_timeout = getattr(request, "rebalance_timeout", None)  # v0: the session timeout serves
    rebalance_timeout_ms = session_timeout_ms if rebalance_timeout is None else milliseconds(rebalance_timeout)
    try:
        result = await context.services.groups.coordinator_for(request.group_id).join_group(
            api.JoinGroupRequest(
                group_id=request.group_id, member_id=request.member_id,
                group_instance_id=getattr(request, "group_instance_id", None),
                client_id=context.header.client_id or "", client_host=client_host(context),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                protocol_type=request.protocol_type, protocols=tuple((p.name, p.metadata) for p in request.protocols),
                require_known_member_id=context.version >= KNOWN_MEMBER_ID_VERSION))
    except GroupError as exc:
        member_id = exc.member_id if isinstance(exc, MemberIdRequiredError) else request.member_id
        return schema.JoinGroupResponse(throttle_time=_NO_THROTTLE, error_code=to_error_code(exc),
                                        generation_id=i32(-1), protocol_type=None, protocol_name="", leader="",
                                        member_id=member_id, members=())
    return schema.JoinGroupResponse(
        throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, generation_id=i32(result.generation_id),
        protocol_type=result.protocol_type, protocol_name=result.protocol_name or "", leader=result.leader_id,
        member_id=result.member_id, skip_assignment=False,
        members=tuple(schema.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                     metadata=m.metadata) for m in result.members))
