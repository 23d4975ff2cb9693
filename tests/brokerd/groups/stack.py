"""A broker's group stack in-process for unit tests: real storage, replica manager and GroupManager over
either the standalone metadata file or `ScriptedMetadata` (a metadata layer whose image the test sets,
to move leadership and epochs)."""

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from brokerd.clock import SystemClock
from brokerd.config import GroupSettings
from brokerd.groups.manager import GroupManager
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.metadata.standalone import StandaloneMetadataStore
from brokerd.metadata.store import ImageListener, MetadataStore
from brokerd.metadata.validation import TopicDefaults
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC

NODE = BrokerEndpoint(1, "127.0.0.1", 9092)
OTHER = BrokerEndpoint(2, "127.0.0.1", 1)  # nothing listens there: a follower's fetcher just retries
FAST = GroupSettings(min_session_timeout_ms=10, initial_rebalance_delay_ms=0, offsets_topic_num_partitions=3,
                     offsets_topic_replication_factor=1,
                     offsets_commit_timeout_ms=300)


class ScriptedMetadata:
    """The metadata layer as a test script: `set_image` plays a control-plane change."""

    def __init__(self, image: ClusterImage) -> None:
        self._image = image
        self._listeners: list[ImageListener] = []

    @property
    def image(self) -> ClusterImage:
        return self._image

    def add_listener(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    def set_image(self, image: ClusterImage) -> None:
        old, self._image = self._image, image
        for listener in self._listeners:
            listener(old, image)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def refresh(self) -> None:
        pass


def offsets_image(partitions: int, leader: int = 1, leader_epoch: int = 0, isr: tuple[int, ...] = (1,),
                  replicas: tuple[int, ...] = (1,), configs: Mapping[str, str] | None = None) -> ClusterImage:
    """A cluster of brokers 1 and 2 holding only `__consumer_offsets`, every partition in the same state."""
    topic = TopicMetadata(CONSUMER_OFFSETS_TOPIC, "00000000-0000-0000-0000-0000000000c0", tuple(
        PartitionAssignment(p, leader, leader_epoch, replicas, isr) for p in range(partitions)),
        dict(configs or {}))
    return ClusterImage("cluster", 1, (NODE, OTHER), {CONSUMER_OFFSETS_TOPIC: topic})


@dataclass
class Stack:
    metadata: MetadataStore
    logs: LogManager
    replicas: ReplicaManager
    groups: GroupManager


@contextlib.asynccontextmanager
async def group_stack(directory: Path, settings: GroupSettings = FAST,
                      metadata: MetadataStore | None = None) -> AsyncIterator[Stack]:
    """Start storage (in `directory`), the metadata (standalone unless given), replicas and groups; stop them."""
    logs = LogManager(log_dirs=[directory / "logs"], cluster_defaults={}, clock=SystemClock())
    logs.startup()
    if metadata is None:
        store = StandaloneMetadataStore(directory / "meta.json", NODE, TopicDefaults())
        store.open()
        metadata = store
    replicas = ReplicaManager(logs, metadata, node_id=NODE.node_id, clock=SystemClock())
    replicas.start()
    groups = GroupManager(metadata, replicas, settings, SystemClock())
    groups.start()
    try:
        yield Stack(metadata, logs, replicas, groups)
    finally:
        await groups.stop()
        await replicas.stop()
        logs.shutdown()


def with_settings(**changes) -> GroupSettings:
    return dataclasses.replace(FAST, **changes)
