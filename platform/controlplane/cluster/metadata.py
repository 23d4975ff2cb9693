"""The metadata image brokers receive, the metadata version, and the lock every metadata change takes.

Concurrency contract: every change to brokers, topics or partitions runs inside `transaction.atomic()` and
starts with `locked_state()`, which locks the single `ControllerState` row (SELECT … FOR UPDATE on
PostgreSQL; SQLite's IMMEDIATE transactions already serialise writers). Changes are therefore applied one at
a time, and whoever holds the lock sees the latest committed epochs. `bump()` increments `metadata_version`;
readers (`image`, `wait_for_version`) take no lock.
"""

import time

from django.db import transaction

from controlplane.topics.models import Partition, Topic

from .models import CLUSTER_DEFAULT, Broker, BrokerConfig, BrokerState, ControllerState

__all__ = ("broker_configs_image", "bump", "current_version", "image", "locked_state", "partition_image",
           "topic_image", "wait_for_version")

MAX_WAIT_MS = 30_000
POLL_STEP_S = 0.02


def locked_state() -> ControllerState:
    """Lock and return the controller-state row; only inside `transaction.atomic()`."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("locked_state() must be called inside transaction.atomic()")
    state = ControllerState.objects.select_for_update().filter(singleton=True).first()
    if state is None:  # a flushed test database: recreate the row (migrations create it otherwise)
        ControllerState.objects.get_or_create(singleton=True)
        state = ControllerState.objects.select_for_update().get(singleton=True)
    return state


def bump(state: ControllerState) -> int:
    """Record a committed change: increment the metadata version (the caller holds `locked_state()`)."""
    state.metadata_version += 1
    state.save(update_fields=["metadata_version", "updated_at"])
    return state.metadata_version


def current_version() -> int:
    return ControllerState.objects.filter(singleton=True).values_list("metadata_version", flat=True).first() or 0


def wait_for_version(min_version: int, wait_ms: int) -> int:
    """Block until `metadata_version >= min_version` or `wait_ms` passed; return the version last seen.

    Polls one indexed single-row SELECT every 20 ms: changes come from other processes (the controller,
    other web workers), so an in-process condition variable could not see them all.
    """
    deadline = time.monotonic() + min(max(wait_ms, 0), MAX_WAIT_MS) / 1000
    while True:
        version = current_version()
        remaining = deadline - time.monotonic()
        if version >= min_version or remaining <= 0:
            return version
        time.sleep(min(POLL_STEP_S, remaining))


def partition_image(partition: Partition) -> dict:
    return {"partition": partition.partition, "replicas": list(partition.replicas), "isr": list(partition.isr),
            "leader": partition.leader, "leader_epoch": partition.leader_epoch,
            "partition_epoch": partition.partition_epoch, "adding_replicas": list(partition.adding_replicas),
            "removing_replicas": list(partition.removing_replicas)}


def topic_image(topic: Topic, partitions: list[Partition] | None = None) -> dict:
    if partitions is None:
        partitions = list(topic.partitions.order_by("partition"))
    return {"name": topic.name, "topic_id": str(topic.topic_id), "configs": dict(topic.configs),
            "partitions": [partition_image(p) for p in partitions]}


def broker_configs_image() -> dict[str, dict[str, str]]:
    """Dynamic broker config overrides keyed by broker id as a string, "default" for the cluster default."""
    return {"default" if c.broker_id == CLUSTER_DEFAULT else str(c.broker_id): dict(c.configs)
            for c in BrokerConfig.objects.all() if c.configs}


def image() -> dict:
    """The full metadata image (see ARCHITECTURE.md, "Broker ↔ control plane internal API").

    The version is read first, so the data that follows is at least that new. Topics and partitions come
    from one joined query, so a topic is never seen without its partitions.
    """
    state = ControllerState.objects.filter(singleton=True).first() or ControllerState.current()
    brokers = list(Broker.objects.order_by("broker_id"))
    by_topic: dict[int, tuple[Topic, list[Partition]]] = {}
    for partition in Partition.objects.select_related("topic").order_by("topic__name", "partition"):
        by_topic.setdefault(partition.topic_id, (partition.topic, []))[1].append(partition)
    running = [b.broker_id for b in brokers if b.state == BrokerState.RUNNING]
    return {
        "cluster_id": state.cluster_id,
        "metadata_version": state.metadata_version,
        # Every broker forwards admin requests to the control plane (as KRaft brokers do), so the
        # "controller" brokers name in Metadata responses is any running broker: the lowest id, so all agree.
        "controller_id": min(running, default=-1),
        "brokers": [{"broker_id": b.broker_id, "listeners": b.listeners, "rack": b.rack or None,
                     "state": b.state, "registration_epoch": b.registration_epoch} for b in brokers],
        "topics": [topic_image(topic, partitions) for topic, partitions in by_topic.values()],
        "broker_configs": broker_configs_image(),
    }
