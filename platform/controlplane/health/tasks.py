"""Celery tasks of the health app (scheduled by django-celery-beat; see the 0002 data migration)."""

from celery import shared_task

from .snapshot import take_snapshot


@shared_task(name="controlplane.health.record_cluster_health", ignore_result=False)
def record_cluster_health() -> int:
    """Record one health snapshot; returns its id."""
    return take_snapshot().pk
