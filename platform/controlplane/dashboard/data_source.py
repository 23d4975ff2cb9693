"""The control plane's implementation of webui's DashboardDataSource, reading the metadata store."""

from collections import Counter
from dataclasses import asdict

from controlplane.cluster.models import Broker
from controlplane.health.models import ClusterHealthSnapshot
from controlplane.health.snapshot import measure_health
from controlplane.topics.models import NO_LEADER, Partition
from webui.data import BrokerLoad, ClusterSummary, HealthPoint


class MetadataStoreDataSource:
    """Reads through the ORM on every call (the dashboard refreshes on its own interval)."""

    def cluster_summary(self) -> ClusterSummary:
        return ClusterSummary(**asdict(measure_health()))

    def broker_load(self) -> list[BrokerLoad]:
        leaders: Counter[int] = Counter()
        replicas: Counter[int] = Counter()
        for replica_ids, leader in Partition.objects.values_list("replicas", "leader").iterator():
            replicas.update(replica_ids)
            if leader != NO_LEADER:
                leaders[leader] += 1
        return [BrokerLoad(broker_id=b.broker_id, state=b.state, leaders=leaders[b.broker_id],
                           replicas=replicas[b.broker_id]) for b in Broker.objects.all()]

    def health_history(self, limit: int) -> list[HealthPoint]:
        latest = ClusterHealthSnapshot.objects.order_by("-taken_at")[:limit]
        return [HealthPoint(taken_at=s.taken_at, brokers_running=s.brokers_running,
                            offline_partitions=s.offline_partitions,
                            under_replicated_partitions=s.under_replicated_partitions)
                for s in reversed(latest)]
