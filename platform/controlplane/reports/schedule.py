"""The reports' entries in django-celery-beat's database schedule: one crontab periodic task per report
(lag hourly at minute 5, retention daily at 02:15 UTC by default), editable in the console and the REST API.
Beat runs `controlplane.reports.scheduled_report`, which queues a run like "Run now" does; and, every minute, the
reaper of runs whose runner died (`reaper.py`)."""

import json

from django.core.exceptions import ValidationError
from django_celery_beat.validators import crontab_validator

from .models import Report

TASK = "controlplane.reports.scheduled_report"
TASK_NAMES = {Report.LAG: "Lag report", Report.RETENTION: "Retention report"}
DEFAULT_CRONTABS = {Report.LAG: "5 * * * *", Report.RETENTION: "15 2 * * *"}
REAPER_TASK_NAME = "Fail orphaned report runs"
REAPER_TASK = "controlplane.reports.reap_orphaned_runs"
REAPER_EVERY_S = 60
CRONTAB_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def check_crontab(expression: str) -> list[str]:
    """The five fields of a crontab expression ("minute hour day-of-month month day-of-week"); a bad one
    raises ValidationError with one line."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValidationError(f"a crontab has 5 fields (minute hour day-of-month month day-of-week), "
                              f"not {len(fields)}: {expression!r}")
    try:
        crontab_validator(" ".join(fields))
    except ValidationError as error:
        raise ValidationError(f"bad crontab {expression!r}: {' '.join(error.messages)}") from None
    return fields


def set_schedule(crontab_model, periodic_task_model, report: str, expression: str, enabled: bool):
    """Create or update the report's periodic task (UTC). Takes the model classes so migrations can pass
    historical ones."""
    crontab, _ = crontab_model.objects.get_or_create(
        **dict(zip(CRONTAB_FIELDS, check_crontab(expression), strict=True)), timezone="UTC")
    periodic, _ = periodic_task_model.objects.update_or_create(
        name=TASK_NAMES[report], defaults={"task": TASK, "crontab": crontab, "interval": None, "enabled": enabled,
                                           "kwargs": json.dumps({"report": report})})
    return periodic


def crontab_expression(periodic) -> str:
    return " ".join(getattr(periodic.crontab, field) for field in CRONTAB_FIELDS)
