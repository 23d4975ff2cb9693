"""CreateTopics v0-v7: validated and recorded by the metadata store; errors per topic (with a message, v1+).

Per-version meaning: v0 cannot ask for validation only (v1+); v5+ answers the created topic's partition
count, replication factor and effective configs (`configs` with their source), v7+ its topic id.
"""

import datetime
from collections import Counter

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i16, i32

from brokerd.metadata.image import NO_TOPIC_ID, NewTopic, TopicMetadata
from brokerd.server.context import RequestContext
from brokerd.server.handlers._configs import topic_config_entries
from brokerd.server.handlers._errors import to_error

_NO_THROTTLE = datetime.timedelta(0)


def _created(context: RequestContext, name: str, topic: TopicMetadata | None, requested) -> object:
    """The result of a created (or validated) topic; v5+ describes it."""
    schema = context.response
    if not schema.has("CreatableTopicResult", "configs"):
        return schema.CreatableTopicResult(name=name, error_code=ErrorCode.none, error_message=None)
    overrides = topic.configs if topic is not None else {c.name: c.value for c in requested.configs}
    partitions = topic.partitions if topic is not None else ()
    return schema.CreatableTopicResult(
        name=name, error_code=ErrorCode.none, error_message=None,
        topic_id=topic.uuid if topic is not None else NO_TOPIC_ID,
        num_partitions=i32(len(partitions) if partitions else requested.num_partitions),
        replication_factor=i16(len(partitions[0].replicas) if partitions else requested.replication_factor),
        configs=tuple(schema.CreatableTopicConfigs(name=e.name, value=e.value, read_only=False,
                                                   config_source=i8(e.source), is_sensitive=e.is_sensitive)
                      for e in topic_config_entries(overrides, context.services.config.properties)))


async def handle(request, context: RequestContext) -> object:
    metadata = context.services.metadata
    schema = context.response
    validate_only = getattr(request, "validate_only", False)
    counts = Counter(topic.name for topic in request.topics)
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            results.append(schema.CreatableTopicResult(name=topic.name, error_code=ErrorCode.invalid_request,
                                                       error_message="Duplicate topic name in the request."))
            continue
        new_topic = NewTopic(
            name=topic.name, num_partitions=topic.num_partitions, replication_factor=topic.replication_factor,
            configs={config.name: config.value for config in topic.configs},
            assignments={a.partition_index: tuple(a.broker_ids) for a in topic.assignments},
        )
        try:
            created = await metadata.create_topic(new_topic, validate_only=validate_only,
                                                  origin=context.origin)
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this topic
            code, message = to_error(exc)
            results.append(schema.CreatableTopicResult(name=topic.name, error_code=code, error_message=message))
            continue
        if not validate_only:
            await context.services.replicas.created()  # this broker's replicas of it serve from the answer on
        results.append(_created(context, topic.name, None if validate_only else created, topic))
    return schema.CreateTopicsResponse(throttle_time=_NO_THROTTLE, topics=tuple(results))
