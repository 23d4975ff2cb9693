"""Celery tasks of the audit app (scheduled by django-celery-beat; see the 0002 data migration)."""

from celery import shared_task
from django.conf import settings

from .services import prune


@shared_task(name="controlplane.audit.prune_audit_log")
def prune_audit_log() -> int:
    """Delete audit entries older than STROM_AUDIT_RETENTION_DAYS; returns how many."""
    return prune(settings.STROM_AUDIT_RETENTION_DAYS)
