"""ListOffsets v0-v9: latest (-1) = high watermark, earliest (-2) and earliest-local (-4, v8+; no tiered
storage) = log start offset, max timestamp (-3, v7+) = the record with the largest timestamp, latest-tiered
(-5, v9+) = -1 (nothing is tiered); otherwise the first offset whose timestamp is >= the given one (-1 if
none). The answer carries the leader epoch of the partition's leader (v4+), and `current_leader_epoch`
(v4+) is validated like Fetch.

v0 answers a list of offsets instead (`old_style_offsets`, Kafka's `legacyFetchOffsetsBefore`: segment base
offsets newest first, at most `max_num_offsets`).
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import answer_each

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
_NO_THROTTLE = datetime.timedelta(0)


def _offset_and_timestamp(partition, timestamp: int) -> tuple[int, int]:
    if timestamp == LATEST_TIMESTAMP:
        return partition.high_watermark, -1
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return partition.log_start_offset, -1
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = partition.max_timestamp_offset()
    else:
        found = partition.offset_for_timestamp(timestamp)
    return found if found is not None else (-1, -1)


async def handle(request, context: RequestContext) -> object:
    replicas = context.services.replicas
    schema = context.response
    legacy = context.version == 0

    def look_up(topic: str, requested) -> object:
        partition = replicas.leader_partition(topic, requested.partition_index)
        partition.check_leader_epoch(getattr(requested, "current_leader_epoch", -1))
        if legacy:
            offsets = partition.legacy_offsets_before(requested.timestamp, requested.max_num_offsets)
            return schema.ListOffsetsPartitionResponse(partition_index=i32(requested.partition_index),
                                                       error_code=ErrorCode.none,
                                                       old_style_offsets=tuple(i64(o) for o in offsets))
        offset, timestamp = _offset_and_timestamp(partition, requested.timestamp)
        return schema.ListOffsetsPartitionResponse(partition_index=i32(requested.partition_index),
                                                   error_code=ErrorCode.none, timestamp=i64(timestamp),
                                                   offset=i64(offset), leader_epoch=i32(partition.leader_epoch))

    def failed(requested, code: ErrorCode) -> object:
        return schema.ListOffsetsPartitionResponse(partition_index=requested.partition_index, error_code=code,
                                                   old_style_offsets=())

    topics = tuple(
        schema.ListOffsetsTopicResponse(name=topic.name, partitions=answer_each(
            topic.partitions, lambda requested, name=topic.name: look_up(name, requested), failed))
        for topic in request.topics)
    return schema.ListOffsetsResponse(throttle_time=_NO_THROTTLE, topics=topics)
