"""The retention task's entry in django-celery-beat's database schedule (daily)."""

TASK_NAME = "Prune the audit log"
TASK = "controlplane.audit.prune_audit_log"
EVERY_DAYS = 1


def ensure_schedule(interval_model, periodic_task_model):
    """Create or update the periodic task. Takes the model classes so migrations can pass historical ones."""
    interval, _ = interval_model.objects.get_or_create(every=EVERY_DAYS, period="days")
    task, _ = periodic_task_model.objects.update_or_create(
        name=TASK_NAME, defaults={"task": TASK, "interval": interval, "enabled": True})
    return task
