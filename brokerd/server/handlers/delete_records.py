"""DeleteRecords v1: advance each partition's log start offset (-1 means up to the high watermark)."""

import datetime

from kio.schema.delete_records.v1.request import DeleteRecordsRequest
from kio.schema.delete_records.v1.response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

HIGH_WATERMARK = -1


async def handle(request: DeleteRecordsRequest, context: RequestContext) -> DeleteRecordsResponse:
    partitions = context.services.partitions
    topics = []
    for topic in request.topics:
        results = []
        for requested in topic.partitions:
            try:
                partition = partitions.get(topic.name, requested.partition_index)
                offset = partition.high_watermark if requested.offset == HIGH_WATERMARK else requested.offset
                if not 0 <= offset <= partition.high_watermark:
                    results.append(DeleteRecordsPartitionResult(
                        partition_index=i32(requested.partition_index), low_watermark=i64(-1),
                        error_code=ErrorCode.offset_out_of_range))
                    continue
                low_watermark = partition.delete_records_before(offset)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                results.append(DeleteRecordsPartitionResult(partition_index=i32(requested.partition_index),
                                                            low_watermark=i64(-1), error_code=to_error_code(exc)))
                continue
            results.append(DeleteRecordsPartitionResult(partition_index=i32(requested.partition_index),
                                                        low_watermark=i64(low_watermark),
                                                        error_code=ErrorCode.none))
        topics.append(DeleteRecordsTopicResult(name=topic.name, partitions=tuple(results)))
    return DeleteRecordsResponse(throttle_time=datetime.timedelta(0), topics=tuple(topics))
