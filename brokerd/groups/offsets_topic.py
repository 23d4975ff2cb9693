"""The internal topic `__consumer_offsets`: created on demand by the first FindCoordinator for a group,
like Kafka, and the group → partition → coordinator lookup over it.

Creation goes through the `MetadataStore` (a local file standalone, the control plane in a cluster) with
`offsets.topic.num.partitions` partitions, `offsets.topic.replication.factor` replicas and Kafka's topic
configs (compacted, 100 MiB segments, producer compression). Like Kafka, it is not created while fewer
brokers are alive than the replication factor asks for: COORDINATOR_NOT_AVAILABLE until they are.
The coordinator of a group is the leader of partition `partition_for(group, partition count)`.
"""

import asyncio

from brokerd.config import GroupSettings
from brokerd.groups.errors import CoordinatorNotAvailableError
from brokerd.metadata.image import BrokerEndpoint, NewTopic, TopicMetadata
from brokerd.metadata.internal_topics import InternalTopicUnavailable, ensure_internal_topic
from brokerd.metadata.store import MetadataStore
from kafkaspec.consumer_offsets import partition_for
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC

OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"}
"""Kafka's `GroupCoordinator.offsetsTopicConfigs`."""


def group_partition(image_topic: TopicMetadata | None, group_id: str) -> int | None:
    """The `__consumer_offsets` partition of `group_id`, or None while the topic does not exist."""
    if image_topic is None or not image_topic.partitions:
        return None
    return partition_for(group_id, len(image_topic.partitions))


class OffsetsTopic:
    """Finds (creating the topic if needed) the broker coordinating a group. Event loop only."""

    def __init__(self, metadata: MetadataStore, settings: GroupSettings) -> None:
        self._metadata = metadata
        self._settings = settings
        self._creating = asyncio.Lock()

    async def coordinator(self, group_id: str) -> BrokerEndpoint:
        """The leader of the group's partition; raises CoordinatorNotAvailableError when there is none."""
        topic = await self._ensure_topic()
        index = group_partition(topic, group_id)
        assert index is not None
        leader_id = topic.partitions[index].leader_id
        broker = self._metadata.image.broker(leader_id) if leader_id >= 0 else None
        if broker is None or broker.fenced:
            raise CoordinatorNotAvailableError(f"{CONSUMER_OFFSETS_TOPIC}-{index} has no leader")
        return broker

    async def _ensure_topic(self) -> TopicMetadata:
        async with self._creating:
            try:
                return await ensure_internal_topic(self._metadata, NewTopic(
                    CONSUMER_OFFSETS_TOPIC, self._settings.offsets_topic_num_partitions,
                    self._settings.offsets_topic_replication_factor, OFFSETS_TOPIC_CONFIGS))
            except InternalTopicUnavailable as exc:
                raise CoordinatorNotAvailableError(str(exc)) from exc
