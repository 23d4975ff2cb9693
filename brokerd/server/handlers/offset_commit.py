"""OffsetCommit v3: a member commits for its generation, or an Empty group is committed to "simply"
(generation -1, no member id). Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; a group-level
refusal (NOT_COORDINATOR, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, …) answers every partition."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v3.request import OffsetCommitRequest
from kio.schema.offset_commit.v3.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

from brokerd.groups import coordinator
from brokerd.groups.errors import GroupError
from brokerd.protocol.errors import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.handlers._groups import milliseconds, split_unknown

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: OffsetCommitRequest, context: RequestContext) -> OffsetCommitResponse:
    codes, known = split_unknown(context.services.metadata.image, request.topics)
    requested = {(t.name, p.partition_index): p for t in request.topics for p in t.partitions}
    offsets = {tp: coordinator.OffsetToCommit(requested[tp].committed_offset, requested[tp].committed_metadata or "")
               for tp in known}
    if offsets:
        try:
            results = await context.services.groups.coordinator_for(request.group_id).commit_offsets(
                coordinator.OffsetCommitRequest(
                    group_id=request.group_id, generation_id=request.generation_id_or_member_epoch,
                    member_id=request.member_id, group_instance_id=None, offsets=offsets,
                    retention_time_ms=milliseconds(request.retention_time)))
            codes.update({tp: ErrorCode.none if e is None else error_code(e) for tp, e in results.items()})
        except GroupError as exc:
            codes.update(dict.fromkeys(offsets, to_error_code(exc)))
    return OffsetCommitResponse(throttle_time=_NO_THROTTLE, topics=tuple(
        OffsetCommitResponseTopic(name=topic.name, partitions=tuple(
            OffsetCommitResponsePartition(partition_index=p.partition_index,
                                          error_code=codes[(topic.name, p.partition_index)])
            for p in topic.partitions))
        for topic in request.topics))
