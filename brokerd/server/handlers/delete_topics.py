"""DeleteTopics v0-v6: removed from the metadata store; the partition layer then deletes their logs.
v5+ answers an error message; v6+ may name topics by id (UNKNOWN_TOPIC_ID if none has it) and answers
the id of each."""

import datetime
import uuid

from kio.schema.errors import ErrorCode

from brokerd.metadata.image import NO_TOPIC_ID
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error

_NO_THROTTLE = datetime.timedelta(0)


def _requested(request, context: RequestContext) -> list[tuple[str | None, uuid.UUID]]:
    """(name or None if no topic has the id, topic id) per requested topic."""
    image = context.services.metadata.image
    if not hasattr(request, "topics"):
        return [(name, getattr(image.topics.get(name), "uuid", NO_TOPIC_ID)) for name in request.topic_names]
    resolved = []
    for topic in request.topics:
        if topic.name is not None:
            resolved.append((topic.name, getattr(image.topics.get(topic.name), "uuid", NO_TOPIC_ID)))
        else:
            known = image.topic_by_id(topic.topic_id)
            resolved.append((None if known is None else known.name, topic.topic_id))
    return resolved


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    results = []
    for name, topic_id in _requested(request, context):
        if name is None:
            results.append(schema.DeletableTopicResult(name=None, topic_id=topic_id,
                                                       error_code=ErrorCode.unknown_topic_id,
                                                       error_message=f"No topic has the id {topic_id}"))
            continue
        try:
            await context.services.metadata.delete_topic(name, origin=context.origin)
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this topic
            code, message = to_error(exc)
            results.append(schema.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code,
                                                       error_message=message))
            continue
        results.append(schema.DeletableTopicResult(name=name, topic_id=topic_id, error_code=ErrorCode.none))
    return schema.DeleteTopicsResponse(throttle_time=_NO_THROTTLE, responses=tuple(results))
