"""CreatePartitions v0-v3: grow a topic; explicit assignments must name registered brokers."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.metadata.errors import InvalidReplicaAssignmentError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    metadata = context.services.metadata
    results = []
    for topic in request.topics:
        try:
            if topic.assignments is not None:
                known = {b.node_id for b in metadata.image.brokers}
                if any(n not in known for a in topic.assignments for n in a.broker_ids):
                    raise InvalidReplicaAssignmentError("Assignment names a broker that is not registered")
            assignments = (None if topic.assignments is None
                           else [[int(n) for n in a.broker_ids] for a in topic.assignments])
            await metadata.create_partitions(topic.name, topic.count, validate_only=request.validate_only,
                                             assignments=assignments, origin=context.origin)
            if not request.validate_only:
                await context.services.replicas.created()  # this broker's new replicas serve from the answer on
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this topic
            code, message = to_error(exc)
            results.append(schema.CreatePartitionsTopicResult(name=topic.name, error_code=code, error_message=message))
            continue
        results.append(schema.CreatePartitionsTopicResult(name=topic.name, error_code=ErrorCode.none))
    return schema.CreatePartitionsResponse(throttle_time=datetime.timedelta(0), results=tuple(results))
