"""AlterPartitionReassignments v0 and ListPartitionReassignments v0 (KIP-455), decided by the metadata store:
the control plane's controller in a cluster (reassignment.md §1.5, §1.8), a one-replica answer standalone.
Errors are per partition (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS);
a failure of the store itself (e.g. the control plane unreachable) is the top-level error."""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error

_NO_THROTTLE = datetime.timedelta(0)


async def alter(request, context: RequestContext) -> object:
    schema = context.response
    wanted = [(t.name, int(p.partition_index), None if p.replicas is None else [int(b) for b in p.replicas])
              for t in request.topics for p in t.partitions]
    top_error, top_message = ErrorCode.none, None
    try:
        results = await context.services.metadata.alter_partition_reassignments(wanted, origin=context.origin)
    except Exception as exc:  # noqa: BLE001 - the error goes on the wire
        top_error, top_message = to_error(exc)
        results = []
    by_topic: dict[str, list[object]] = {}
    for topic, partition, error, message in results:
        by_topic.setdefault(topic, []).append(schema.ReassignablePartitionResponse(
            partition_index=i32(partition), error_code=ErrorCode.none if error is None else error_code(error),
            error_message=message))
    return schema.AlterPartitionReassignmentsResponse(
        throttle_time=_NO_THROTTLE, error_code=top_error, error_message=top_message,
        responses=tuple(schema.ReassignableTopicResponse(name=t, partitions=tuple(r)) for t, r in by_topic.items()))


async def list_(request, context: RequestContext) -> object:
    schema = context.response
    wanted = None if request.topics is None else [
        (t.name, int(p)) for t in request.topics for p in t.partition_indexes]
    top_error, top_message = ErrorCode.none, None
    try:
        found = await context.services.metadata.list_partition_reassignments(wanted)
    except Exception as exc:  # noqa: BLE001 - the error goes on the wire
        top_error, top_message = to_error(exc)
        found = []
    by_topic: dict[str, list[object]] = {}
    for r in found:
        by_topic.setdefault(r.topic, []).append(schema.OngoingPartitionReassignment(
            partition_index=i32(r.partition), replicas=tuple(i32(b) for b in r.replicas),
            adding_replicas=tuple(i32(b) for b in r.adding), removing_replicas=tuple(i32(b) for b in r.removing)))
    return schema.ListPartitionReassignmentsResponse(
        throttle_time=_NO_THROTTLE, error_code=top_error, error_message=top_message,
        topics=tuple(schema.OngoingTopicReassignment(name=t, partitions=tuple(p)) for t, p in by_topic.items()))
