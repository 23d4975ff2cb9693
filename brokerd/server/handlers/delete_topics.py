"""DeleteTopics v3: removed from the metadata store; the partition layer then deletes their logs."""

import datetime

from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.delete_topics.v3.response import DeletableTopicResult, DeleteTopicsResponse
from kio.schema.errors import ErrorCode

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code


async def handle(request: DeleteTopicsRequest, context: RequestContext) -> DeleteTopicsResponse:
    results = []
    for name in request.topic_names:
        try:
            await context.services.metadata.delete_topic(name, origin=context.origin)
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this topic
            results.append(DeletableTopicResult(name=name, error_code=to_error_code(exc)))
            continue
        results.append(DeletableTopicResult(name=name, error_code=ErrorCode.none))
    return DeleteTopicsResponse(throttle_time=datetime.timedelta(0), responses=tuple(results))
