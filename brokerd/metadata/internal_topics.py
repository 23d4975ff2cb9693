"""Internal topics the brokers create on first use (`__consumer_offsets`, `__strom_metrics`), like Kafka: through
the metadata store, and only once as many brokers are alive as the topic's replication factor asks for."""

import contextlib
import logging

from brokerd.metadata.errors import MetadataError
from brokerd.metadata.image import NewTopic, TopicMetadata
from brokerd.metadata.store import MetadataStore

log = logging.getLogger(__name__)


class InternalTopicUnavailable(Exception):
    """The topic does not exist and cannot be created now (too few brokers alive, the store refused)."""


async def ensure_internal_topic(metadata: MetadataStore, topic: NewTopic) -> TopicMetadata:
    """`topic` as the image has it, created first if missing. Raises InternalTopicUnavailable. Callers that may
    race themselves serialise calls (another broker creating it first is handled here)."""
    existing = metadata.image.topics.get(topic.name)
    if existing is not None:
        return existing
    alive = len(metadata.image.live_brokers)
    if alive < topic.replication_factor:
        raise InternalTopicUnavailable(f"{alive} alive brokers are fewer than the replication factor "
                                       f"{topic.replication_factor} of {topic.name}")
    try:
        created = await metadata.create_topic(topic)
    except MetadataError as exc:
        if exc.kafka_error == "TOPIC_ALREADY_EXISTS":  # another broker created it first
            with contextlib.suppress(MetadataError):
                await metadata.refresh()
            existing = metadata.image.topics.get(topic.name)
            if existing is not None:
                return existing
        log.warning("cannot create %s: %s", topic.name, exc)
        raise InternalTopicUnavailable(f"cannot create {topic.name}: {exc}") from exc
    log.info("created %s with %d partitions, replication factor %d", topic.name, len(created.partitions),
             topic.replication_factor)
    return created
