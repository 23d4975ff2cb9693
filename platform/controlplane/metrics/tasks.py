"""Celery tasks of the metrics app (scheduled by django-celery-beat; see the 0002 data migration)."""

from celery import shared_task

from .prune import prune_points


@shared_task(name="controlplane.metrics.prune_metric_rollups", ignore_result=False)
def prune_metric_rollups() -> int:
    """Delete rollup points past their retention; returns how many."""
    return prune_points()
