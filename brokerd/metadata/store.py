"""The metadata interface handlers and the partition layer use; implementations differ only in where
the truth lives (a local file in standalone mode, the control plane in a cluster).

Reads are synchronous snapshots (`image`); mutations are coroutines that return once the change is
durable and the new image is visible, then notify listeners on the event loop.
"""

from collections.abc import Callable, Mapping
from typing import Protocol

from brokerd.metadata.image import ClusterImage, NewTopic, TopicMetadata

ImageListener = Callable[[ClusterImage, ClusterImage], None]
"""Called as listener(old, new) after every change."""


class MetadataStore(Protocol):
    @property
    def image(self) -> ClusterImage: ...

    def add_listener(self, listener: ImageListener) -> None: ...

    async def create_topic(self, topic: NewTopic, validate_only: bool = False) -> TopicMetadata:
        """Raises TopicExistsError, InvalidTopicError, InvalidPartitionsError,
        InvalidReplicationFactorError, InvalidConfigError."""

    async def delete_topic(self, name: str) -> None:
        """Raises UnknownTopicError."""

    async def create_partitions(self, name: str, total_count: int, validate_only: bool = False) -> None:
        """Grow `name` to `total_count` partitions. Raises UnknownTopicError, InvalidPartitionsError."""

    async def set_topic_configs(self, name: str, overrides: Mapping[str, str],
                                validate_only: bool = False) -> None:
        """Replace the topic's overrides. Raises UnknownTopicError, InvalidConfigError."""

    async def allocate_producer_id(self) -> int:
        """A producer id never handed out before in this cluster (survives restarts)."""
