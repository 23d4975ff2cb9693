"""OffsetForLeaderEpoch v3 (non-flexible): where a leader epoch ends in the leader's log (KIP-101/279).

For each partition this broker leads: the largest epoch <= the requested one and the offset where the
next epoch starts (the log end offset for the current epoch); (-1, -1) if the epoch is unknown.
`current_leader_epoch` is validated like Fetch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). Followers
use it to truncate on a leader change (`brokerd.replication.fetcher`).
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.offset_for_leader_epoch.v3.request import OffsetForLeaderEpochRequest
from kio.schema.offset_for_leader_epoch.v3.response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from kio.static.primitive import i32, i64

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import answer_each


async def handle(request: OffsetForLeaderEpochRequest, context: RequestContext) -> OffsetForLeaderEpochResponse:
    partitions = context.services.partitions

    def end_offset(topic: str, requested) -> EpochEndOffset:
        partition = partitions.get(topic, requested.partition)
        partition.check_leader_epoch(requested.current_leader_epoch)
        epoch, offset = partition.end_offset_for_epoch(requested.leader_epoch)
        return EpochEndOffset(error_code=ErrorCode.none, partition=requested.partition,
                              leader_epoch=i32(epoch), end_offset=i64(offset))

    def failed(requested, code: ErrorCode) -> EpochEndOffset:
        return EpochEndOffset(error_code=code, partition=requested.partition)

    topics = tuple(
        OffsetForLeaderTopicResult(topic=topic.topic, partitions=answer_each(
            topic.partitions, lambda requested, name=topic.topic: end_offset(name, requested), failed))
        for topic in request.topics)
    return OffsetForLeaderEpochResponse(throttle_time=datetime.timedelta(0), topics=topics)
