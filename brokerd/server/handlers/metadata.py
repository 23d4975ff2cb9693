"""Metadata v4: brokers, controller, cluster id and topic leadership; auto-creates topics when both the
request and `auto.create.topics.enable` allow it (with `num.partitions`, `default.replication.factor`)."""

import contextlib
import datetime

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v4.request import MetadataRequest
from kio.schema.metadata.v4.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from brokerd.metadata.errors import MetadataError, UnknownTopicError
from brokerd.metadata.image import NewTopic, TopicMetadata
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from kafkaspec.topic_names import is_internal

_NO_THROTTLE = datetime.timedelta(0)


def _topic_response(topic: TopicMetadata) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=ErrorCode.none, name=TopicName(topic.name), is_internal=is_internal(topic.name),
        partitions=tuple(
            MetadataResponsePartition(
                error_code=ErrorCode.none, partition_index=i32(p.partition), leader_id=BrokerId(p.leader_id),
                replica_nodes=tuple(BrokerId(n) for n in p.replicas),
                isr_nodes=tuple(BrokerId(n) for n in p.isr),
            )
            for p in topic.partitions
        ),
    )


def _error_topic(name: str, error: ErrorCode) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=error, name=TopicName(name), partitions=())


async def handle(request: MetadataRequest, context: RequestContext) -> MetadataResponse:
    services = context.services
    image = services.metadata.image
    if request.topics is None:
        topics = tuple(_topic_response(t) for t in image.topics.values())
    else:
        auto_create = request.allow_auto_topic_creation and services.config.auto_create_topics_enable
        results = []
        for requested in request.topics:
            name = requested.name
            topic = services.metadata.image.topics.get(name)
            if topic is None and auto_create:
                try:
                    topic = await services.metadata.create_topic(
                        NewTopic(name=name, num_partitions=-1, replication_factor=-1, configs={}),
                        origin=context.origin)
                except Exception as exc:  # noqa: BLE001 - the error goes on the wire per topic
                    if getattr(exc, "kafka_error", None) != "TOPIC_ALREADY_EXISTS":
                        results.append(_error_topic(name, to_error_code(exc)))
                        continue
                    # Created meanwhile (cluster: our image lags the control plane): read it again; if it
                    # is still not here, a retriable LEADER_NOT_AVAILABLE, as Kafka answers a new topic.
                    with contextlib.suppress(MetadataError):
                        await services.metadata.refresh()
                    topic = services.metadata.image.topics.get(name)
                    if topic is None:
                        results.append(_error_topic(name, ErrorCode.leader_not_available))
                        continue
            if topic is None:
                results.append(_error_topic(name, to_error_code(UnknownTopicError())))
            else:
                results.append(_topic_response(topic))
        topics = tuple(results)
        image = services.metadata.image
    return MetadataResponse(
        throttle_time=_NO_THROTTLE,
        brokers=tuple(MetadataResponseBroker(node_id=BrokerId(b.node_id), host=b.host, port=i32(b.port),
                                             rack=b.rack) for b in image.live_brokers),
        cluster_id=image.cluster_id,
        controller_id=BrokerId(image.controller_id),
        topics=topics,
    )
