"""Dropping rollup points older than their resolution's retention (`rollup.RETENTION_S`)."""

from datetime import timedelta

from django.utils import timezone

from . import rollup
from .models import BrokerMetricPoint, LagMetricPoint, LogDirMetricPoint, TopicMetricPoint

POINT_MODELS = (BrokerMetricPoint, TopicMetricPoint, LogDirMetricPoint, LagMetricPoint)


def prune_points(now=None) -> int:
    """Delete expired points of every resolution; returns how many."""
    now = now or timezone.now()
    deleted = 0
    for model in POINT_MODELS:
        for resolution, keep_s in rollup.RETENTION_S.items():
            deleted += model.objects.filter(resolution=resolution, start__lt=now - timedelta(seconds=keep_s)
                                            ).delete()[0]
    return deleted
