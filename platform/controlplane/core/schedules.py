"""Periodic tasks in django-celery-beat's database schedule, created or updated idempotently (from data
migrations, which pass their historical model classes)."""


def ensure_interval_task(interval_model, periodic_task_model, name: str, task: str, every_s: int):
    """The enabled periodic task `name` running `task` every `every_s` seconds."""
    interval, _ = interval_model.objects.get_or_create(every=every_s, period="seconds")
    periodic, _ = periodic_task_model.objects.update_or_create(
        name=name, defaults={"task": task, "interval": interval, "enabled": True})
    return periodic
