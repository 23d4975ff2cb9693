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
from brokerd.server.handlers._errors import to_error_code

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


async def handle(request: ListOffsetsRequest, context: RequestContext) -> ListOffsetsResponse:
    partitions = context.services.partitions
    topics = []
    for topic in request.topics:
        results = []
        for requested in topic.partitions:
            try:
                partition = partitions.get(topic.name, requested.partition_index)
                if requested.timestamp == LATEST_TIMESTAMP:
                    offset, timestamp = partition.high_watermark, -1
                elif requested.timestamp == EARLIEST_TIMESTAMP:
                    offset, timestamp = partition.log_start_offset, -1
                else:
                    found = partition.offset_for_timestamp(requested.timestamp)
                    offset, timestamp = found if found is not None else (-1, -1)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                results.append(ListOffsetsPartitionResponse(partition_index=requested.partition_index,
                                                            error_code=to_error_code(exc)))
                continue
            results.append(ListOffsetsPartitionResponse(
                partition_index=i32(requested.partition_index), error_code=ErrorCode.none,
                timestamp=i64(timestamp), offset=i64(offset)))
        topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(results)))
    return ListOffsetsResponse(throttle_time=datetime.timedelta(0), topics=tuple(topics))
