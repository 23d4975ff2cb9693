"""ListGroups v1: the groups coordinated by this broker (admin clients ask every broker);
COORDINATOR_LOAD_IN_PROGRESS, with the groups known so far, while a partition is still loading."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.list_groups.v1.request import ListGroupsRequest
from kio.schema.list_groups.v1.response import ListedGroup, ListGroupsResponse

from brokerd.protocol.errors import error_code
from brokerd.server.context import RequestContext

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: ListGroupsRequest, context: RequestContext) -> ListGroupsResponse:
    groups, error = context.services.groups.list_groups()
    return ListGroupsResponse(
        throttle_time=_NO_THROTTLE, error_code=ErrorCode.none if error is None else error_code(error),
        groups=tuple(ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type) for g in groups))
