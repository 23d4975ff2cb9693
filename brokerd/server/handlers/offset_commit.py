"""OffsetCommit v0-v9: a member commits for its generation, or an Empty group is committed to "simply"
(generation -1, no member id; v0 can only commit simply). Partitions of unknown topics get
UNKNOWN_TOPIC_OR_PARTITION; a group-level refusal (NOT_COORDINATOR, ILLEGAL_GENERATION,
REBALANCE_IN_PROGRESS, …) answers every partition.

Per-version fields: v1's per-partition commit timestamp is not kept (the commit time is the broker's, as
Kafka does from v2 on); v2-v4 may set a retention time (-1: `offsets.retention.minutes`); v6+ commits the
leader epoch; v7+ names static members.
"""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.groups import api
from brokerd.groups.errors import GroupError
from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.handlers._groups import milliseconds, split_unknown

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request, context: RequestContext) -> object:
    codes, known = split_unknown(context.services.metadata.image, request.topics)
    requested = {(t.name, p.partition_index): p for t in request.topics for p in t.partitions}
    offsets = {tp: api.OffsetToCommit(requested[tp].committed_offset,
                                              requested[tp].committed_metadata or "",
                                              getattr(requested[tp], "committed_leader_epoch", -1))
               for tp in known}
    retention = getattr(request, "retention_time", None)
    if offsets:
        try:
            results = await context.services.groups.coordinator_for(request.group_id).commit_offsets(
                api.OffsetCommitRequest(
                    group_id=request.group_id,
                    generation_id=getattr(request, "generation_id_or_member_epoch", -1),
                    member_id=getattr(request, "member_id", ""),
                    group_instance_id=getattr(request, "group_instance_id", None), offsets=offsets,
                    retention_time_ms=-1 if retention is None else milliseconds(retention)))
            codes.update({tp: ErrorCode.none if e is None else error_code(e) for tp, e in results.items()})
        except GroupError as exc:
            codes.update(dict.fromkeys(offsets, to_error_code(exc)))
    schema = context.response
    return schema.OffsetCommitResponse(throttle_time=_NO_THROTTLE, topics=tuple(
        schema.OffsetCommitResponseTopic(name=topic.name, partitions=tuple(
            schema.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                 error_code=codes[(topic.name, p.partition_index)])
            for p in topic.partitions))
        for topic in request.topics))
