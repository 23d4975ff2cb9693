"""The alerts app's entries in django-celery-beat's database schedule: the outbox sweep, the cluster-alert check."""

from controlplane.core.schedules import ensure_interval_task

TASK_NAME = "Send due webhook deliveries"
TASK = "controlplane.alerts.dispatch_due_deliveries"
DEFAULT_EVERY_S = 5


def ensure_schedule(interval_model, periodic_task_model, every_s: int = DEFAULT_EVERY_S):
    """Create or update the periodic task. Takes the model classes so migrations can pass historical ones."""
    return ensure_interval_task(interval_model, periodic_task_model, TASK_NAME, TASK, every_s)


CLUSTER_TASK_NAME = "Check cluster alerts"
CLUSTER_TASK = "controlplane.alerts.check_cluster_alerts"
CLUSTER_EVERY_S = 15


def ensure_cluster_schedule(interval_model, periodic_task_model, every_s: int = CLUSTER_EVERY_S):
    return ensure_interval_task(interval_model, periodic_task_model, CLUSTER_TASK_NAME, CLUSTER_TASK, every_s)
