"""Standalone metadata: one broker that is its own controller, truth kept in a local JSON file.

File format (`<first log dir>/strom-metadata.json`), rewritten atomically (temp file + fsync + rename)
on every change::

    {"version": 1, "cluster_id": "<22-char base64>", "next_producer_id": 1000,
     "topics": {"name": {"topic_id": "<uuid>", "partitions": 3, "configs": {"retention.ms": "1000"}}}}

Every partition is led by this broker with leader epoch 0 and a single-replica ISR. There is no audit log here
(admin calls ignore their `origin`).
Called only from the event loop; not thread-safe.
"""

import base64
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from brokerd.metadata.errors import MetadataError, UnknownTopicError
from brokerd.metadata.image import (
    BrokerEndpoint,
    ClusterImage,
    NewTopic,
    PartitionAssignment,
    TopicMetadata,
)
from brokerd.metadata.store import AdminOrigin, ImageListener, IsrProposal, Reassignment
from brokerd.metadata.validation import (
    TopicDefaults,
    resolve_new_topic,
    validate_configs,
    validate_partition_increase,
)

FILE_NAME = "strom-metadata.json"
PRODUCER_ID_BLOCK = 1000
"""Producer ids are reserved on disk in blocks, so allocation rarely writes the file."""


class StandaloneMetadataStore:
    """MetadataStore over a JSON file; `open()` loads or creates it."""

    def __init__(self, path: Path, broker: BrokerEndpoint, defaults: TopicDefaults) -> None:
        self._path = path
        self._broker = broker
        self._defaults = defaults
        self._listeners: list[ImageListener] = []
        self._state: dict = {}
        self._image: ClusterImage | None = None
        self._next_producer_id = 0

    def open(self) -> None:
        if self._path.exists():
            self._state = json.loads(self._path.read_text())
        else:
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            self._state = {"version": 1, "cluster_id": cluster_id, "next_producer_id": 0, "topics": {}}
        # Never reuse an id that a previous run may have handed out from its reserved block.
        self._next_producer_id = self._state["next_producer_id"]
        self._state["next_producer_id"] = self._next_producer_id + PRODUCER_ID_BLOCK
        self._write()
        self._image = self._build_image()

    async def start(self) -> None:
        if self._image is None:
            self.open()

    async def stop(self) -> None:
        pass

    async def refresh(self) -> None:
        pass

    async def alter_partitions(self, proposals: Sequence[IsrProposal]) -> list[PartitionAssignment | MetadataError]:
        """The only replica is always in sync: a standalone ISR never changes."""
        return [self.image.partition(p.topic, p.partition)
                or UnknownTopicError(f"{p.topic}-{p.partition} does not exist") for p in proposals]

    async def elect_leaders(self, election_type: str, partitions: list[tuple[str, int]] | None,
                            origin: AdminOrigin | None = None) -> list[tuple[str, int, str | None]]:
        """Every partition already has its only possible leader."""
        if partitions is None:
            partitions = [(t.name, p.partition) for t in self.image.topics.values() for p in t.partitions]
        return [(t, p, "ELECTION_NOT_NEEDED" if self.image.partition(t, p) is not None
                 else "UNKNOWN_TOPIC_OR_PARTITION") for t, p in partitions]

    async def alter_partition_reassignments(self, requests: list[tuple[str, int, list[int] | None]],
                                            origin: AdminOrigin | None = None
                                            ) -> list[tuple[str, int, str | None, str | None]]:
        """One broker: only the current replica set is a valid target, and nothing is ever in progress."""
        results = []
        for topic, number, replicas in requests:
            partition = self.image.partition(topic, number)
            if partition is None:
                results.append((topic, number, "UNKNOWN_TOPIC_OR_PARTITION", f"Unknown partition {topic}-{number}"))
            elif replicas is None:
                results.append((topic, number, "NO_REASSIGNMENT_IN_PROGRESS", "No reassignment in progress"))
            elif tuple(replicas) == partition.replicas:
                results.append((topic, number, None, None))
            else:
                results.append((topic, number, "INVALID_REPLICA_ASSIGNMENT",
                                f"Broker(s) {sorted(set(replicas) - set(partition.replicas))} are not registered: "
                                "a standalone broker is the only replica"))
        return results

    async def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None
                                           ) -> list[Reassignment]:
        return []

    @property
    def image(self) -> ClusterImage:
        assert self._image is not None, "open() first"
        return self._image

    def add_listener(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    async def create_topic(self, topic: NewTopic, validate_only: bool = False,
                           origin: AdminOrigin | None = None) -> TopicMetadata:
        partitions, _replication_factor, configs = resolve_new_topic(topic, self.image, self._defaults)
        entry = {"topic_id": str(uuid.uuid4()), "partitions": partitions, "configs": configs}
        if validate_only:
            return self._topic_metadata(topic.name, entry)
        self._state["topics"][topic.name] = entry
        self._commit()
        return self.image.topics[topic.name]

    async def delete_topic(self, name: str, origin: AdminOrigin | None = None) -> None:
        self._require(name)
        del self._state["topics"][name]
        self._commit()

    async def create_partitions(self, name: str, total_count: int, validate_only: bool = False,
                                assignments: list[list[int]] | None = None, origin: AdminOrigin | None = None
                                ) -> None:
        entry = self._require(name)
        validate_partition_increase(entry["partitions"], total_count)
        if not validate_only:
            entry["partitions"] = total_count
            self._commit()

    async def set_topic_configs(self, name: str, overrides: Mapping[str, str],
                                validate_only: bool = False, origin: AdminOrigin | None = None) -> None:
        entry = self._require(name)
        configs = validate_configs(overrides)
        if not validate_only:
            entry["configs"] = configs
            self._commit()

    async def allocate_producer_id(self) -> int:
        producer_id = self._next_producer_id
        self._next_producer_id += 1
        if self._next_producer_id >= self._state["next_producer_id"]:
            self._state["next_producer_id"] = self._next_producer_id + PRODUCER_ID_BLOCK
            self._write()
        return producer_id

    def _require(self, name: str) -> dict:
        entry = self._state["topics"].get(name)
        if entry is None:
            raise UnknownTopicError(f"Topic '{name}' does not exist.")
        return entry

    def _commit(self) -> None:
        self._write()
        old, self._image = self._image, self._build_image()
        for listener in self._listeners:
            listener(old, self._image)

    def _write(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        with open(temporary, "w") as file:
            json.dump(self._state, file, indent=1, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self._path)

    def _topic_metadata(self, name: str, entry: dict) -> TopicMetadata:
        node = self._broker.node_id
        partitions = tuple(
            PartitionAssignment(partition=index, leader_id=node, leader_epoch=0, replicas=(node,), isr=(node,))
            for index in range(entry["partitions"])
        )
        return TopicMetadata(name=name, topic_id=entry["topic_id"], partitions=partitions,
                             configs=dict(entry["configs"]))

    def _build_image(self) -> ClusterImage:
        topics = {name: self._topic_metadata(name, entry) for name, entry in self._state["topics"].items()}
        return ClusterImage(cluster_id=self._state["cluster_id"], controller_id=self._broker.node_id,
                            brokers=(self._broker,), topics=topics)
