"""DeleteRecords v0-v2: advance each partition's log start offset (-1 means up to the high watermark)."""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import answer_each
from brokerd.storage.errors import OffsetOutOfRangeError

HIGH_WATERMARK = -1


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    replicas = context.services.replicas

    def delete(topic: str, requested) -> object:
        partition = replicas.leader_partition(topic, requested.partition_index)
        offset = partition.high_watermark if requested.offset == HIGH_WATERMARK else requested.offset
        if not 0 <= offset <= partition.high_watermark:
            raise OffsetOutOfRangeError(f"offset {offset} is outside [0, {partition.high_watermark}]")
        return schema.DeleteRecordsPartitionResult(partition_index=i32(requested.partition_index),
                                                   low_watermark=i64(partition.delete_records_before(offset)),
                                                   error_code=ErrorCode.none)

    def failed(requested, code: ErrorCode) -> object:
        return schema.DeleteRecordsPartitionResult(partition_index=i32(requested.partition_index),
                                                   low_watermark=i64(-1), error_code=code)

    topics = tuple(
        schema.DeleteRecordsTopicResult(name=topic.name, partitions=answer_each(
            topic.partitions, lambda requested, name=topic.name: delete(name, requested), failed))
        for topic in request.topics)
    return schema.DeleteRecordsResponse(throttle_time=datetime.timedelta(0), topics=topics)
