"""OffsetDelete v0 (KIP-496): removes a group's committed offsets, allowed for an Empty group or for
topics a consumer group does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise, per partition).
Group-level refusals (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, coordinator errors) list no topics."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups.errors import GroupError
from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.handlers._groups import split_unknown

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    codes, known = split_unknown(context.services.metadata.image, request.topics)
    try:
        results = await context.services.groups.coordinator_for(request.group_id).delete_offsets(
            request.group_id, known)
    except GroupError as exc:
        return schema.OffsetDeleteResponse(error_code=to_error_code(exc), throttle_time=_NO_THROTTLE, topics=())
    codes.update({tp: ErrorCode.none if e is None else error_code(e) for tp, e in results.items()})
    return schema.OffsetDeleteResponse(error_code=ErrorCode.none, throttle_time=_NO_THROTTLE, topics=tuple(
        schema.OffsetDeleteResponseTopic(name=topic.name, partitions=tuple(
            schema.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                          error_code=codes[(topic.name, p.partition_index)])
            for p in topic.partitions))
        for topic in request.topics))
