from datetime import timedelta

import pytest
from django.utils import timezone

from controlplane.health.models import ClusterHealthSnapshot
from controlplane.health.schedule import DEFAULT_EVERY_S
from controlplane.health.snapshot import measure_health, take_snapshot
from controlplane.health.tasks import record_cluster_health


def test_health_is_measured_from_the_metadata_store(cluster):
    health = measure_health()
    assert (health.brokers_total, health.brokers_running) == (cluster["brokers"], cluster["running"])
    assert (health.topics, health.partitions) == (cluster["topics"], cluster["partitions"])
    assert health.offline_partitions == cluster["offline"]
    assert health.under_replicated_partitions == cluster["under_replicated"]


def test_task_records_a_snapshot_and_prunes_old_ones(cluster, settings):
    stale = take_snapshot()
    ClusterHealthSnapshot.objects.filter(pk=stale.pk).update(
        taken_at=timezone.now() - timedelta(days=settings.STROM_HEALTH_RETENTION_DAYS + 1))
    snapshot_id = record_cluster_health.apply().get()
    assert list(ClusterHealthSnapshot.objects.values_list("pk", flat=True)) == [snapshot_id]
    assert ClusterHealthSnapshot.objects.get().partitions == cluster["partitions"]


@pytest.mark.django_db
def test_the_task_is_scheduled_in_the_database():
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.get(task="controlplane.health.record_cluster_health")
    assert task.enabled and task.interval.every == DEFAULT_EVERY_S == 30 and task.interval.period == "seconds"
