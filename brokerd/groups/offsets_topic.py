"""The internal topic `__consumer_offsets`: created on demand by the first FindCoordinator for a group,
like Kafka, and the group → partition → coordinator lookup over it.

Creation goes through the `MetadataStore` (a local file standalone, the control plane in a cluster) with
`offsets.topic.num.partitions` partitions, `offsets.topic.replication.factor` replicas and Kafka's topic
configs (compacted, 100 MiB segments, producer compression). Like Kafka, it is not created while fewer
brokers are alive than the replication factor asks for: COORDINATOR_NOT_AVAILABLE until they are.
The coordinator of a group is the leader of partition `partition_for(group, partition count)`.
"""

import asyncio
import logging

from brokerd.config import GroupSettings
from brokerd.groups.errors import CoordinatorNotAvailableError
from brokerd.metadata.errors import MetadataError
from brokerd.metadata.image import BrokerEndpoint, NewTopic, TopicMetadata
from brokerd.metadata.store import MetadataStore
from kafkaspec.consumer_offsets import partition_for
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC

log = logging.getLogger(__name__)

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
        topic = self._metadata.image.topics.get(CONSUMER_OFFSETS_TOPIC)
        if topic is not None:
            return topic
        async with self._creating:
            image = self._metadata.image
            topic = image.topics.get(CONSUMER_OFFSETS_TOPIC)
            if topic is not None:
                return topic
            replication_factor = self._settings.offsets_topic_replication_factor
            alive = len(image.live_brokers)
            if alive < replication_factor:
                raise CoordinatorNotAvailableError(
                    f"{alive} alive brokers are fewer than offsets.topic.replication.factor={replication_factor}")
            try:
                topic = await self._metadata.create_topic(NewTopic(
                    CONSUMER_OFFSETS_TOPIC, self._settings.offsets_topic_num_partitions, replication_factor,
                    OFFSETS_TOPIC_CONFIGS))
            except MetadataError as exc:
                if exc.kafka_error == "TOPIC_ALREADY_EXISTS":  # another broker created it first
                    await self._refresh()
                    topic = self._metadata.image.topics.get(CONSUMER_OFFSETS_TOPIC)
                    if topic is not None:
                        return topic
                log.warning("cannot create %s: %s", CONSUMER_OFFSETS_TOPIC, exc)
                raise CoordinatorNotAvailableError(f"cannot create {CONSUMER_OFFSETS_TOPIC}: {exc}") from exc
            log.info("created %s with %d partitions, replication factor %d", CONSUMER_OFFSETS_TOPIC,
                     len(topic.partitions), replication_factor)
            return topic

    async def _refresh(self) -> None:
        try:
            await self._metadata.refresh()
        except MetadataError as exc:
            raise CoordinatorNotAvailableError(f"cannot read the metadata: {exc}") from exc
