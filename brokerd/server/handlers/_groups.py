"""What the group handlers share: request units, the client address as Kafka reports it, and the split of
a request's partitions into unknown ones and ones to hand to the coordinator."""

import datetime
from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from brokerd.metadata.image import ClusterImage
from brokerd.server.context import RequestContext
from brokerd.types import TopicPartition


def milliseconds(value: datetime.timedelta) -> int:
    return round(value.total_seconds() * 1000)


def client_host(context: RequestContext) -> str:
    """Kafka shows a member's host as Java's `InetAddress.toString()`: "/127.0.0.1"."""
    return f"/{context.client_host}"


def split_unknown(image: ClusterImage, topics: Iterable) -> tuple[dict[TopicPartition, ErrorCode],
                                                               list[TopicPartition]]:
    """The request's partitions (`topics`: items with `name` and `partitions` of `partition_index`) as
    (UNKNOWN_TOPIC_OR_PARTITION per partition the cluster lacks, the known ones in request order)."""
    unknown: dict[TopicPartition, ErrorCode] = {}
    known: list[TopicPartition] = []
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if image.partition(*tp) is None:
                unknown[tp] = ErrorCode.unknown_topic_or_partition
            else:
                known.append(tp)
    return unknown, known
