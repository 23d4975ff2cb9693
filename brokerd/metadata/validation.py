"""Kafka's rules for topic admin requests, shared by every MetadataStore implementation (no I/O)."""

from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.metadata.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicExistsError,
)
from brokerd.metadata.image import ClusterImage, NewTopic
from kafkaspec import topic_config, topic_names

MAX_PARTITIONS = topic_config.MAX_PARTITIONS


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    """Broker keys `num.partitions` and `default.replication.factor`."""

    num_partitions: int = 1
    replication_factor: int = 1


def validate_topic_name(name: str, image: ClusterImage) -> None:
    try:
        topic_names.validate_topic_name(name)
    except topic_names.InvalidTopicNameError as exc:
        raise InvalidTopicError(str(exc)) from None
    if name in image.topics:
        raise TopicExistsError(f"Topic '{name}' already exists.")
    collision = topic_names.unify_collision_chars(name)
    for existing in image.topics:
        if topic_names.unify_collision_chars(existing) == collision:
            raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {existing}")


def validate_configs(overrides: Mapping[str, str | None]) -> dict[str, str]:
    """Drop null values (Kafka ignores them on create), then validate names and values."""
    present = {name: value for name, value in overrides.items() if value is not None}
    try:
        topic_config.validate_overrides(present)
    except topic_config.InvalidConfigError as exc:
        raise InvalidConfigError(str(exc)) from None
    return present


def resolve_new_topic(topic: NewTopic, image: ClusterImage, defaults: TopicDefaults
                      ) -> tuple[int, int, dict[str, str]]:
    """(num_partitions, replication_factor, overrides) after Kafka's checks, defaults applied."""
    validate_topic_name(topic.name, image)
    if topic.assignments:
        partitions = len(topic.assignments)
        if sorted(topic.assignments) != list(range(partitions)):
            raise InvalidReplicaAssignmentError("Partitions must be numbered 0..n-1 without gaps")
        replication_factors = {len(replicas) for replicas in topic.assignments.values()}
        if len(replication_factors) != 1:
            raise InvalidReplicaAssignmentError("All partitions must have the same number of replicas")
        replication_factor = replication_factors.pop()
        known = {b.node_id for b in image.brokers}
        if any(node not in known for replicas in topic.assignments.values() for node in replicas):
            raise InvalidReplicaAssignmentError("Assignment names a broker that is not registered")
    else:
        partitions = defaults.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        replication_factor = (defaults.replication_factor if topic.replication_factor == -1
                              else topic.replication_factor)
    if not 0 < partitions <= MAX_PARTITIONS:
        raise InvalidPartitionsError(f"Number of partitions must be in [1, {MAX_PARTITIONS}].")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(image.brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(image.brokers)}."
        )
    return partitions, replication_factor, validate_configs(topic.configs)


def validate_partition_increase(current: int, total_count: int) -> None:
    if total_count < current:
        raise InvalidPartitionsError(
            f"The topic currently has {current} partitions, {total_count} would not be an increase."
        )
    if total_count == current:
        raise InvalidPartitionsError(f"Topic already has {current} partitions.")
    if total_count > MAX_PARTITIONS:
        raise InvalidPartitionsError(f"Number of partitions must be at most {MAX_PARTITIONS}.")
