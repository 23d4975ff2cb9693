"""Measuring cluster health from the metadata store, and recording it as a snapshot."""

from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from controlplane.cluster.models import Broker, BrokerState, ControllerState
from controlplane.topics.models import Partition, Topic

from .models import ClusterHealthSnapshot


@dataclass(frozen=True)
class PartitionProblems:
    """Partitions without a running leader, and partitions whose ISR is smaller than their replica set."""

    offline: list[Partition]
    under_replicated: list[Partition]


@dataclass(frozen=True)
class ClusterHealth:
    brokers_total: int
    brokers_running: int
    topics: int
    partitions: int
    offline_partitions: int
    under_replicated_partitions: int
    controller_epoch: int


def running_broker_ids() -> set[int]:
    return set(Broker.objects.filter(state=BrokerState.RUNNING).values_list("broker_id", flat=True))


def partition_problems(running: set[int]) -> tuple[int, PartitionProblems]:
    """(number of partitions, problems); offline = no leader, or a leader that is not running."""
    partitions = list(Partition.objects.select_related("topic"))
    return len(partitions), PartitionProblems(
        offline=[p for p in partitions if p.is_offline or p.leader not in running],
        under_replicated=[p for p in partitions if p.is_under_replicated],
    )


def measure_health() -> ClusterHealth:
    running = running_broker_ids()
    partitions, problems = partition_problems(running)
    return ClusterHealth(
        brokers_total=Broker.objects.count(),
        brokers_running=len(running),
        topics=Topic.objects.count(),
        partitions=partitions,
        offline_partitions=len(problems.offline),
        under_replicated_partitions=len(problems.under_replicated),
        controller_epoch=ControllerState.current().controller_epoch,
    )


def take_snapshot() -> ClusterHealthSnapshot:
    """Store the current health and prune snapshots older than STROM_HEALTH_RETENTION_DAYS."""
    now = timezone.now()
    snapshot = ClusterHealthSnapshot.objects.create(taken_at=now, **asdict(measure_health()))
    ClusterHealthSnapshot.objects.filter(
        taken_at__lt=now - timedelta(days=settings.STROM_HEALTH_RETENTION_DAYS)).delete()
    return snapshot
