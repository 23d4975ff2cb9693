"""ListGroups v0-v5: the groups coordinated by this broker (admin clients ask every broker);
COORDINATOR_LOAD_IN_PROGRESS, with the groups known so far, while a partition is still loading. v4+ answers
each group's state and filters by state (KIP-518, case-insensitive); v5+ answers the group type
("classic": the only protocol served) and filters by type (KIP-848)."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext

_NO_THROTTLE = datetime.timedelta(0)
CLASSIC_GROUP_TYPE = "classic"


async def handle(request, context: RequestContext) -> object:
    groups, error = context.services.groups.list_groups()
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    if types and CLASSIC_GROUP_TYPE not in types:
        groups = []
    schema = context.response
    return schema.ListGroupsResponse(
        throttle_time=_NO_THROTTLE, error_code=ErrorCode.none if error is None else error_code(error),
        groups=tuple(schema.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type,
                                        group_state=g.state.value, group_type=CLASSIC_GROUP_TYPE)
                     for g in groups if not states or g.state.value.lower() in states))
