"""DeleteGroups v0-v2: deletes Empty groups with their offsets; NON_EMPTY_GROUP while members are active,
GROUP_ID_NOT_FOUND for unknown groups, coordinator errors per group."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups.errors import GroupError
from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def _delete(group_id: str, context: RequestContext) -> ErrorCode:
    try:
        results = await context.services.groups.coordinator_for(group_id).delete_groups([group_id])
    except GroupError as exc:
        return to_error_code(exc)
    error = results[group_id]
    return ErrorCode.none if error is None else error_code(error)


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    results = [schema.DeletableGroupResult(group_id=g, error_code=await _delete(g, context))
               for g in request.groups_names]
    return schema.DeleteGroupsResponse(throttle_time=_NO_THROTTLE, results=tuple(results))
