"""ListOffsets v2: latest (-1) = high watermark, earliest (-2) = log start offset, otherwise the first
offset whose timestamp is >= the given one (offset -1 if none)."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v2.request import ListOffsetsRequest
from kio.schema.list_offsets.v2.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kio.static.primitive import i32, i64

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import answer_each

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


async def handle(request: ListOffsetsRequest, context: RequestContext) -> ListOffsetsResponse:
    partitions = context.services.partitions

    def look_up(topic: str, requested) -> ListOffsetsPartitionResponse:
        partition = partitions.get(topic, requested.partition_index)
        if requested.timestamp == LATEST_TIMESTAMP:
            offset, timestamp = partition.high_watermark, -1
        elif requested.timestamp == EARLIEST_TIMESTAMP:
            offset, timestamp = partition.log_start_offset, -1
        else:
            found = partition.offset_for_timestamp(requested.timestamp)
            offset, timestamp = found if found is not None else (-1, -1)
        return ListOffsetsPartitionResponse(partition_index=i32(requested.partition_index),
                                            error_code=ErrorCode.none, timestamp=i64(timestamp), offset=i64(offset))

    def failed(requested, code: ErrorCode) -> ListOffsetsPartitionResponse:
        return ListOffsetsPartitionResponse(partition_index=requested.partition_index, error_code=code)

    topics = tuple(
        ListOffsetsTopicResponse(name=topic.name, partitions=answer_each(
            topic.partitions, lambda requested, name=topic.name: look_up(name, requested), failed))
        for topic in request.topics)
    return ListOffsetsResponse(throttle_time=datetime.timedelta(0), topics=topics)
