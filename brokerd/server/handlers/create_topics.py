"""CreateTopics v3: validated and recorded by the metadata store; errors per topic with a message."""

import datetime
from collections import Counter

from kio.schema.create_topics.v3.request import CreateTopicsRequest
from kio.schema.create_topics.v3.response import CreatableTopicResult, CreateTopicsResponse
from kio.schema.errors import ErrorCode

from brokerd.metadata.image import NewTopic
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error


async def handle(request: CreateTopicsRequest, context: RequestContext) -> CreateTopicsResponse:
    metadata = context.services.metadata
    counts = Counter(topic.name for topic in request.topics)
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            results.append(CreatableTopicResult(name=topic.name, error_code=ErrorCode.invalid_request,
                                                error_message="Duplicate topic name in the request."))
            continue
        new_topic = NewTopic(
            name=topic.name, num_partitions=topic.num_partitions, replication_factor=topic.replication_factor,
            configs={config.name: config.value for config in topic.configs},
            assignments={a.partition_index: tuple(a.broker_ids) for a in topic.assignments},
        )
        try:
            await metadata.create_topic(new_topic, validate_only=request.validate_only, origin=context.origin)
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this topic
            code, message = to_error(exc)
            results.append(CreatableTopicResult(name=topic.name, error_code=code, error_message=message))
            continue
        results.append(CreatableTopicResult(name=topic.name, error_code=ErrorCode.none, error_message=None))
    return CreateTopicsResponse(throttle_time=datetime.timedelta(0), topics=tuple(results))
