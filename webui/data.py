"""What the dashboard reads, as plain typed rows, and the interface of whoever provides them."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class ClusterSummary:
    brokers_total: int
    brokers_running: int
    topics: int
    partitions: int
    offline_partitions: int
    under_replicated_partitions: int
    controller_epoch: int


@dataclass(frozen=True)
class BrokerLoad:
    """Partition counts a broker carries: as leader and as any replica."""

    broker_id: int
    state: str
    leaders: int
    replicas: int


@dataclass(frozen=True)
class HealthPoint:
    taken_at: datetime
    brokers_running: int
    offline_partitions: int
    under_replicated_partitions: int


class DashboardDataSource(Protocol):
    """Provided by the control plane; every call returns the current state."""

    def cluster_summary(self) -> ClusterSummary: ...

    def broker_load(self) -> list[BrokerLoad]: ...

    def health_history(self, limit: int) -> list[HealthPoint]: ...
