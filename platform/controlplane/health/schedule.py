"""The health task's entry in django-celery-beat's database schedule."""

from controlplane.core.schedules import ensure_interval_task

TASK_NAME = "Record cluster health"
TASK = "controlplane.health.record_cluster_health"
DEFAULT_EVERY_S = 30


def ensure_schedule(interval_model, periodic_task_model, every_s: int = DEFAULT_EVERY_S):
    """Create or update the periodic task. Takes the model classes so migrations can pass historical ones."""
    return ensure_interval_task(interval_model, periodic_task_model, TASK_NAME, TASK, every_s)
