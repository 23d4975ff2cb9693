"""OffsetFetch v3: a group's committed offsets for the partitions asked (offset -1 where none is
committed), or every committed partition when `topics` is null. A group-level error is the response's
error code and, as in Kafka, every requested partition's too."""

import datetime
from itertools import groupby

from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v3.request import OffsetFetchRequest
from kio.schema.offset_fetch.v3.response import (
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from kio.static.primitive import i32, i64

from brokerd.groups.errors import GroupError
from brokerd.groups.state import TopicPartition
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from kafkaspec.consumer_offsets import OffsetCommitValue

_NO_THROTTLE = datetime.timedelta(0)


def _topics(entries: list[tuple[TopicPartition, OffsetCommitValue | None]], error: ErrorCode
            ) -> tuple[OffsetFetchResponseTopic, ...]:
    return tuple(
        OffsetFetchResponseTopic(name=name, partitions=tuple(
            OffsetFetchResponsePartition(partition_index=i32(tp[1]),
                                         committed_offset=i64(-1 if value is None else value.offset),
                                         metadata="" if value is None else value.metadata, error_code=error)
            for tp, value in group))
        for name, group in groupby(entries, key=lambda entry: entry[0][0]))


async def handle(request: OffsetFetchRequest, context: RequestContext) -> OffsetFetchResponse:
    requested = None if request.topics is None else [
        (topic.name, index) for topic in request.topics for index in topic.partition_indexes]
    try:
        found = context.services.groups.coordinator_for(request.group_id).fetch_offsets(request.group_id, requested)
    except GroupError as exc:
        code = to_error_code(exc)
        return OffsetFetchResponse(throttle_time=_NO_THROTTLE, error_code=code,
                                   topics=_topics([(tp, None) for tp in requested or ()], code))
    entries = sorted(found.items()) if requested is None else [(tp, found[tp]) for tp in requested]
    return OffsetFetchResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none,
                               topics=_topics(entries, ErrorCode.none))
