"""The metadata interface handlers and the partition layer use; implementations differ only in where
the truth lives (a local file in standalone mode, the control plane in a cluster).

Reads are synchronous snapshots (`image`); mutations are coroutines that return once the change is
durable and the new image is visible, then notify listeners on the event loop. The admin mutations take the
`origin` of the request (the Kafka client that asked; None when the broker acts on its own, e.g. creating
`__consumer_offsets`), which the cluster store hands to the control plane for its audit log.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from brokerd.metadata.errors import MetadataError
from brokerd.metadata.image import ClusterImage, NewTopic, PartitionAssignment, TopicMetadata

ImageListener = Callable[[ClusterImage, ClusterImage], None]


@dataclass(frozen=True, slots=True)
class IsrProposal:
    """One partition of an AlterPartition request: the ISR its leader (this broker) proposes at the leader and
    partition epochs it knows."""

    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Reassignment:
    """A partition reassignment in progress: the replicas now (targets first), those being added and removed."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

"""Called as listener(old, new) after every change."""


@dataclass(frozen=True, slots=True)
class AdminOrigin:
    """The Kafka client an admin request came from, for the control plane's audit log."""

    client_host: str
    client_id: str


class MetadataStore(Protocol):
    async def start(self) -> None:
        """Load (standalone) or register and load the first image (cluster); `image` is valid after."""

    async def stop(self) -> None: ...

    @property
    def image(self) -> ClusterImage: ...

    def add_listener(self, listener: ImageListener) -> None: ...

    async def create_topic(self, topic: NewTopic, validate_only: bool = False,
                           origin: AdminOrigin | None = None) -> TopicMetadata:
        """Raises TopicExistsError, InvalidTopicError, InvalidPartitionsError,
        InvalidReplicationFactorError, InvalidConfigError."""

    async def delete_topic(self, name: str, origin: AdminOrigin | None = None) -> None:
        """Raises UnknownTopicError."""

    async def create_partitions(self, name: str, total_count: int, validate_only: bool = False,
                                assignments: list[list[int]] | None = None, origin: AdminOrigin | None = None
                                ) -> None:
        """Grow `name` to `total_count` partitions (new ones on `assignments` if given). Raises
        UnknownTopicError, InvalidPartitionsError."""

    async def set_topic_configs(self, name: str, overrides: Mapping[str, str],
                                validate_only: bool = False, origin: AdminOrigin | None = None) -> None:
        """Replace the topic's overrides. Raises UnknownTopicError, InvalidConfigError."""

    async def allocate_producer_id(self) -> int:
        """A producer id never handed out before in this cluster (survives restarts)."""

    async def alter_partitions(self, proposals: Sequence[IsrProposal]) -> list[PartitionAssignment | MetadataError]:
        """Propose new ISRs as the partitions' leader (Kafka's AlterPartition), all in one request: one outcome
        per proposal, in order — the committed state, or the MetadataError whose `kafka_error` says why that
        partition was refused. Raises a MetadataError when the whole request failed."""

    async def elect_leaders(self, election_type: str, partitions: list[tuple[str, int]] | None,
                            origin: AdminOrigin | None = None) -> list[tuple[str, int, str | None]]:
        """Kafka's ElectLeaders ("preferred" or "unclean"): (topic, partition, error name or None)."""

    async def alter_partition_reassignments(self, requests: list[tuple[str, int, list[int] | None]],
                                            origin: AdminOrigin | None = None
                                            ) -> list[tuple[str, int, str | None, str | None]]:
        """Kafka's AlterPartitionReassignments: each (topic, partition, target replicas, or None to cancel) →
        (topic, partition, error name or None, message)."""

    async def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None
                                           ) -> list[Reassignment]:
        """Kafka's ListPartitionReassignments: those in progress (of `partitions`, or all)."""

    async def refresh(self) -> None:
        """Re-read the metadata now (after a refused conditional update)."""
