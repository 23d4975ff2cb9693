"""The prune task's entry in django-celery-beat's database schedule."""

TASK_NAME = "Prune metric rollups"
TASK = "controlplane.metrics.prune_metric_rollups"
DEFAULT_EVERY_S = 600


def ensure_schedule(interval_model, periodic_task_model, every_s: int = DEFAULT_EVERY_S):
    """Create or update the periodic task. Takes the model classes so migrations can pass historical ones."""
    interval, _ = interval_model.objects.get_or_create(every=every_s, period="seconds")
    task, _ = periodic_task_model.objects.update_or_create(
        name=TASK_NAME, defaults={"task": TASK, "interval": interval, "enabled": True})
    return task
