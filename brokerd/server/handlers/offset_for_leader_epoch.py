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
from brokerd.server.handlers._errors import to_error_code


async def handle(request: OffsetForLeaderEpochRequest, context: RequestContext) -> OffsetForLeaderEpochResponse:
    partitions = context.services.partitions
    topics = []
    for topic in request.topics:
        results = []
        for requested in topic.partitions:
            try:
                partition = partitions.get(topic.topic, requested.partition)
                partition.check_leader_epoch(requested.current_leader_epoch)
                epoch, end_offset = partition.end_offset_for_epoch(requested.leader_epoch)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                results.append(EpochEndOffset(error_code=to_error_code(exc), partition=requested.partition))
                continue
            results.append(EpochEndOffset(error_code=ErrorCode.none, partition=requested.partition,
                                          leader_epoch=i32(epoch), end_offset=i64(end_offset)))
        topics.append(OffsetForLeaderTopicResult(topic=topic.topic, partitions=tuple(results)))
    return OffsetForLeaderEpochResponse(throttle_time=datetime.timedelta(0), topics=tuple(topics))
