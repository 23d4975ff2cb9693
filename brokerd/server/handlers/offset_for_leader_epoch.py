"""OffsetForLeaderEpoch v0-v4: where a leader epoch ends in the leader's log (KIP-101/279).

For each partition this broker leads: the largest epoch <= the requested one and the offset where the
next epoch starts (the log end offset for the current epoch); (-1, -1) if the epoch is unknown (v0 answers
the end offset only). `current_leader_epoch` (v2+) is validated like Fetch (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH). Followers use it to truncate on a leader change (`brokerd.replication.fetcher`).
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import answer_each


async def handle(request, context: RequestContext) -> object:
    replicas = context.services.replicas
    schema = context.response

    def end_offset(topic: str, requested) -> object:
        partition = replicas.leader_partition(topic, requested.partition)
        partition.check_leader_epoch(getattr(requested, "current_leader_epoch", -1))
        epoch, offset = partition.end_offset_for_epoch(requested.leader_epoch)
        return schema.EpochEndOffset(error_code=ErrorCode.none, partition=requested.partition,
                                     leader_epoch=i32(epoch), end_offset=i64(offset))

    def failed(requested, code: ErrorCode) -> object:
        return schema.EpochEndOffset(error_code=code, partition=requested.partition)

    topics = tuple(
        schema.OffsetForLeaderTopicResult(topic=topic.topic, partitions=answer_each(
            topic.partitions, lambda requested, name=topic.topic: end_offset(name, requested), failed))
        for topic in request.topics)
    return schema.OffsetForLeaderEpochResponse(throttle_time=datetime.timedelta(0), topics=topics)
