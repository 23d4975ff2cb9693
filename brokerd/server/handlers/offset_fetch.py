"""OffsetFetch v0-v9: a group's committed offsets for the partitions asked (offset -1 where none is
committed), or every committed partition when `topics` is null (v2+). A group-level error is the
response's error code (v2+) and, as in Kafka, every requested partition's too.

v5+ answers the committed leader epoch; v7's `require_stable` needs no wait here (no transactions, so
no pending transactional offsets); v8+ asks for a batch of groups, each answered in its own entry.
"""

import datetime
from itertools import groupby

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.types import TopicPartition
from kafkaspec.consumer_offsets import OffsetCommitValue

_NO_THROTTLE = datetime.timedelta(0)
BATCHED_VERSION = 8

Entries = list[tuple[TopicPartition, OffsetCommitValue | None]]


def _group_offsets(group_id: str, topics, context: RequestContext) -> tuple[ErrorCode, Entries]:
    """(group error, the entries to answer) for one group; `topics` None means every committed partition."""
    requested = None if topics is None else [(topic.name, index) for topic in topics
                                             for index in topic.partition_indexes]
    try:
        found = context.services.groups.coordinator_for(group_id).fetch_offsets(group_id, requested)
    except GroupError as exc:
        return to_error_code(exc), [(tp, None) for tp in requested or ()]
    return ErrorCode.none, sorted(found.items()) if requested is None else [(tp, found[tp]) for tp in requested]


def _topics(context: RequestContext, entries: Entries, error: ErrorCode, batched: bool) -> tuple[object, ...]:
    schema = context.response
    topic, partition = (("OffsetFetchResponseTopics", "OffsetFetchResponsePartitions") if batched
                        else ("OffsetFetchResponseTopic", "OffsetFetchResponsePartition"))
    make_topic, make_partition = getattr(schema, topic), getattr(schema, partition)
    return tuple(
        make_topic(name=name, partitions=tuple(
            make_partition(partition_index=i32(tp[1]), committed_offset=i64(-1 if value is None else value.offset),
                           committed_leader_epoch=i32(-1 if value is None else value.leader_epoch),
                           metadata="" if value is None else value.metadata, error_code=error)
            for tp, value in group))
        for name, group in groupby(entries, key=lambda entry: entry[0][0]))


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    if context.version >= BATCHED_VERSION:
        groups = []
        for group in request.groups:
            error, entries = _group_offsets(group.group_id, group.topics, context)
            groups.append(schema.OffsetFetchResponseGroup(group_id=group.group_id, error_code=error,
                                                          topics=_topics(context, entries, error, batched=True)))
        return schema.OffsetFetchResponse(throttle_time=_NO_THROTTLE, groups=tuple(groups))
    error, entries = _group_offsets(request.group_id, request.topics, context)
    return schema.OffsetFetchResponse(throttle_time=_NO_THROTTLE, error_code=error,
                                      topics=_topics(context, entries, error, batched=False))
