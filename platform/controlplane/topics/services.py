"""Topic administration as Kafka's controller does it: CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs / IncrementalAlterConfigs. Used by the internal API (for brokers' admin clients), and meant for
the REST API and the console too.

Every function validates first, then (unless `validate_only`) applies the change in one transaction under
`metadata.locked_state()` and bumps the metadata version. Errors are `KafkaApiError`s named like Kafka's.
"""

import random
import uuid
from collections.abc import Mapping, Sequence

from django.conf import settings
from django.db import IntegrityError, transaction

from controlplane.cluster import metadata
from controlplane.cluster.models import Broker, BrokerState
from controlplane.core.errors import KafkaApiError
from kafkaspec import topic_config, topic_names

from .models import Partition, Topic
from .placement import PlacementError, assign_replicas

__all__ = ("DEFAULT", "MAX_DEFAULT_REPLICATION_FACTOR", "alter_configs", "audit_state", "create_partitions",
           "create_topic", "delete_topic", "parse_assignments")

DEFAULT = -1  # num_partitions / replication_factor: use the cluster default
MAX_DEFAULT_REPLICATION_FACTOR = 3
_ZERO_UUID = str(uuid.UUID(int=0))


def audit_state(name: object) -> dict | None:
    """A topic as the audit log shows it before and after a change (None if it does not exist)."""
    topic = Topic.objects.filter(name=name).first() if isinstance(name, str) else None
    if topic is None:
        return None
    first = topic.partitions.order_by("partition").first()
    return {"topic_id": str(topic.topic_id), "partitions": topic.partitions.count(),
            "replication_factor": len(first.replicas) if first else 0, "configs": topic.configs}


def _running_brokers() -> dict[int, str]:
    return dict(Broker.objects.filter(state=BrokerState.RUNNING).values_list("broker_id", "rack"))


def parse_assignments(raw: object) -> list[list[int]] | None:
    """Manual assignments as replica lists by partition, from `[[1, 2], …]` or Kafka's
    `[{"partition_index": 0, "broker_ids": [1, 2]}, …]` (also `partition` / `replicas`). None if absent."""
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list):
        raise KafkaApiError("INVALID_REQUEST", "assignments must be a list")
    if all(isinstance(a, list) for a in raw):
        pairs = list(enumerate(raw))
    elif all(isinstance(a, dict) for a in raw):
        try:
            pairs = [(a["partition_index"] if "partition_index" in a else a["partition"],
                      a["broker_ids"] if "broker_ids" in a else a["replicas"]) for a in raw]
        except KeyError as e:
            raise KafkaApiError("INVALID_REQUEST", f"assignment without {e}") from None
    else:
        raise KafkaApiError("INVALID_REQUEST", "assignments must be replica lists or objects")
    for index, replicas in pairs:
        if not isinstance(index, int) or not isinstance(replicas, list) or \
                not all(isinstance(b, int) and not isinstance(b, bool) for b in replicas):
            raise KafkaApiError("INVALID_REQUEST", "an assignment is a partition index and a list of broker ids")
    if sorted(i for i, _ in pairs) != list(range(len(pairs))):
        raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT",
                            "partitions should be a consecutive 0-based integer sequence")
    return [replicas for _, replicas in sorted(pairs)]


def _validate_assignment(assignments: list[list[int]], registered: set[int], running: set[int],
                         first_partition: int = 0, replication_factor: int | None = None) -> None:
    for offset, replicas in enumerate(assignments):
        p = first_partition + offset
        if not replicas:
            raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT",
                                f"The manual partition assignment includes an empty replica list for partition {p}.")
        if len(set(replicas)) != len(replicas):
            raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT",
                                f"The manual partition assignment of partition {p} includes a broker more than once.")
        unknown = sorted(set(replicas) - registered)
        if unknown:
            raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker "
                                                              f"{unknown[0]}, but no such broker is registered.")
        if not set(replicas) & running:
            raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"All brokers specified in the manual partition "
                                                              f"assignment for partition {p} are fenced or in "
                                                              "controlled shutdown.")
        if len(replicas) != (replication_factor or len(assignments[0])):
            raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", "All partitions in the manual partition assignment "
                                                              "must have the same number of replicas.")


def _validated_configs(configs: Mapping[str, object]) -> dict[str, str]:
    if not isinstance(configs, Mapping):
        raise KafkaApiError("INVALID_REQUEST", "configs must be a mapping of config names to values")
    try:
        parsed = topic_config.validate_overrides(configs)
    except topic_config.InvalidConfigError as e:
        raise KafkaApiError("INVALID_CONFIG", str(e)) from None
    # Stored as Kafka's strings (e.g. "true", "3600000"), the form DescribeConfigs shows.
    return {name: topic_config.TOPIC_CONFIGS[name].render(value) for name, value in parsed.items()}


def _new_partitions(topic: Topic, first: int, replica_lists: list[list[int]], running: set[int]) -> list[Partition]:
    partitions = []
    for offset, replicas in enumerate(replica_lists):
        isr = [b for b in replicas if b in running]
        partitions.append(Partition(topic=topic, partition=first + offset, replicas=replicas, isr=isr,
                                    leader=isr[0] if isr else -1))
    return partitions


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise KafkaApiError("INVALID_TOPIC_EXCEPTION", "Topic name must be a string")
    try:
        topic_names.validate_topic_name(name)
    except topic_names.InvalidTopicNameError as e:
        raise KafkaApiError("INVALID_TOPIC_EXCEPTION", str(e)) from None
    if Topic.objects.filter(name=name).exists():
        raise KafkaApiError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
    unified = topic_names.unify_collision_chars(name)
    for other in Topic.objects.filter(name__in={name.replace(".", "_"), name.replace("_", ".")} - {name}):
        if topic_names.unify_collision_chars(other.name) == unified:
            raise KafkaApiError("INVALID_TOPIC_EXCEPTION", f"Topic '{name}' collides with existing topic: {other.name}")
    return name


def _topic_or_404(name: str) -> Topic:
    topic = Topic.objects.filter(name=name).first()
    if topic is None:
        raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"This server does not host this topic: {name}")
    return topic


def create_topic(name: str, num_partitions: int = DEFAULT, replication_factor: int = DEFAULT,
                 assignments: list[list[int]] | None = None, configs: Mapping[str, object] | None = None,
                 validate_only: bool = False, rng: random.Random | None = None) -> dict:
    """CreateTopics for one topic; returns its image (topic id all zeros when `validate_only`)."""
    with transaction.atomic():
        state = metadata.locked_state()
        _check_name(name)
        running = _running_brokers()
        if assignments:
            if num_partitions != DEFAULT or replication_factor != DEFAULT:
                raise KafkaApiError("INVALID_REQUEST", "Both numPartitions or replicationFactor and "
                                    "replicasAssignments were set. Both cannot be used at the same time.")
            if len(assignments) > topic_config.MAX_PARTITIONS:
                raise KafkaApiError("INVALID_PARTITIONS",
                                    f"Number of partitions must be at most {topic_config.MAX_PARTITIONS}.")
            _validate_assignment(assignments, set(Broker.objects.values_list("broker_id", flat=True)), set(running))
            replica_lists = assignments
        else:
            if num_partitions == DEFAULT:
                num_partitions = settings.STROM_NUM_PARTITIONS
            if num_partitions <= 0:
                raise KafkaApiError("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive "
                                                          "value.")
            if num_partitions > topic_config.MAX_PARTITIONS:
                raise KafkaApiError("INVALID_PARTITIONS",
                                    f"Number of partitions must be at most {topic_config.MAX_PARTITIONS}.")
            if replication_factor == DEFAULT:
                replication_factor = min(MAX_DEFAULT_REPLICATION_FACTOR, len(running)) or 1
            if replication_factor <= 0:
                raise KafkaApiError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0, or -1 "
                                                                  "to use the default value.")
            try:
                replica_lists = assign_replicas(running, num_partitions, replication_factor, rng)
            except PlacementError as e:
                raise KafkaApiError("INVALID_REPLICATION_FACTOR", str(e)) from None
        overrides = _validated_configs(configs or {})
        topic = Topic(name=name, configs=overrides)
        partitions = _new_partitions(topic, 0, replica_lists, set(running))
        if validate_only:
            return {**metadata.topic_image(topic, partitions), "topic_id": _ZERO_UUID}
        try:
            with transaction.atomic():
                topic.save()
        except IntegrityError:
            raise KafkaApiError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.") from None
        for partition in partitions:
            partition.topic = topic
        Partition.objects.bulk_create(partitions)
        metadata.bump(state)
    return metadata.topic_image(topic, partitions)


def delete_topic(name: str) -> None:
    """DeleteTopics for one topic: its partitions go with it."""
    with transaction.atomic():
        state = metadata.locked_state()
        _topic_or_404(name).delete()
        metadata.bump(state)


def create_partitions(name: str, count: int, assignments: list[list[int]] | None = None,
                      validate_only: bool = False, rng: random.Random | None = None) -> dict:
    """CreatePartitions: grow the topic to `count` partitions (the new total, never fewer)."""
    with transaction.atomic():
        state = metadata.locked_state()
        topic = _topic_or_404(name)
        existing = list(topic.partitions.order_by("partition"))
        if not isinstance(count, int) or count <= len(existing):
            raise KafkaApiError("INVALID_PARTITIONS",
                                f"Topic currently has {len(existing)} partitions, which is higher than the requested "
                                f"{count}." if isinstance(count, int) and count < len(existing) else
                                f"Topic already has {len(existing)} partitions.")
        if count > topic_config.MAX_PARTITIONS:
            raise KafkaApiError("INVALID_PARTITIONS",
                                f"Number of partitions must be at most {topic_config.MAX_PARTITIONS}.")
        added = count - len(existing)
        replication_factor = len(existing[0].replicas)
        running = _running_brokers()
        if assignments:
            if len(assignments) != added:
                raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT",
                                    f"Attempted to add {added} additional partition(s), but only {len(assignments)} "
                                    "assignment(s) were specified.")
            _validate_assignment(assignments, set(Broker.objects.values_list("broker_id", flat=True)), set(running),
                                 len(existing), replication_factor)
            replica_lists = assignments
        else:
            try:
                replica_lists = assign_replicas(running, added, replication_factor, rng, start_partition=len(existing))
            except PlacementError as e:
                raise KafkaApiError("INVALID_REPLICATION_FACTOR", str(e)) from None
        partitions = _new_partitions(topic, len(existing), replica_lists, set(running))
        if validate_only:
            return metadata.topic_image(topic, existing + partitions)
        Partition.objects.bulk_create(partitions)
        metadata.bump(state)
    return metadata.topic_image(topic)


def alter_configs(name: str, set_configs: Mapping[str, object] | None = None, delete: Sequence[str] = (),
                  replace: bool = False, validate_only: bool = False) -> dict:
    """`replace`: AlterConfigs (the overrides become exactly `set_configs`); otherwise
    IncrementalAlterConfigs (set these, delete those, keep the rest)."""
    set_configs = set_configs or {}
    if not isinstance(set_configs, Mapping) or isinstance(delete, str | bytes) or \
            not all(isinstance(k, str) for k in delete):
        raise KafkaApiError("INVALID_REQUEST", "set must be a mapping and delete a list of config names")
    with transaction.atomic():
        state = metadata.locked_state()
        topic = _topic_or_404(name)
        if replace:
            new = dict(set_configs)
        else:
            unknown = sorted(set(delete) - set(topic_config.TOPIC_CONFIGS))
            if unknown:
                raise KafkaApiError("INVALID_CONFIG", f"Unknown topic config name: {unknown[0]}")
            new = {k: v for k, v in topic.configs.items() if k not in delete}
            new.update(set_configs)
        topic.configs = _validated_configs(new)
        if validate_only:
            return metadata.topic_image(topic)
        Topic.objects.filter(pk=topic.pk).update(configs=topic.configs)
        metadata.bump(state)
    return metadata.topic_image(topic)
