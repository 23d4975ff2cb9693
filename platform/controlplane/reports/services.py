"""Starting and cancelling report runs, and changing their schedules (the front ends check and audit; these
change state only)."""

import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url

from . import schedule
from .inputs import check_parameters
from .models import ReportRun, RunStatus, Trigger, new_run_id


class QueueUnavailable(Exception):
    """The run could not be queued: Celery's broker (Redis) refused or is unreachable. The run is recorded
    failed with the reason (`run.error`, also this exception's message)."""

    def __init__(self, run: ReportRun):
        super().__init__(run.error)
        self.run = run


def start_run(report: str, parameters: dict, trigger: str = Trigger.MANUAL, user=None) -> ReportRun:
    """Queue a run (parameters checked: ParameterError); the Celery task is sent once the row is committed —
    at once outside a transaction, where a broker that cannot take it raises QueueUnavailable (inside one, the
    run is only recorded failed)."""
    run = ReportRun.objects.create(report=report, run_id=new_run_id(report), trigger=trigger, requested_by=user,
                                   parameters=check_parameters(report, parameters),
                                   celery_task_id=str(uuid.uuid4()))
    transaction.on_commit(lambda: _send(run))
    if run.status == RunStatus.FAILED:
        raise QueueUnavailable(run)
    return run


def _send(run: ReportRun) -> None:
    """Send the run's task to the reports queue; if the broker cannot take it, record the run failed."""
    from .tasks import run_report

    try:
        run_report.apply_async(args=[run.pk], task_id=run.celery_task_id, queue=settings.STROM_REPORTS_QUEUE)
    except OperationalError as error:  # kombu's wrapper of the transport's connection errors
        broker = maybe_sanitize_url(settings.CELERY_BROKER_URL)
        fail_run(run, f"not queued: Celery's broker at {broker} is unreachable ({error}); start Redis and run "
                      "the report again")


class NotCancellable(ValueError):
    """The run already reached a final status."""


def cancel_run(run: ReportRun) -> ReportRun:
    """A queued run is cancelled at once (its task then does nothing); a running one is stopped by its runner
    within a second (the job's process group killed), which then records `cancelled`."""
    if ReportRun.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.CANCELLED, cancel_requested=True, finished_at=timezone.now()):
        run.refresh_from_db()
        return run
    if not ReportRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(cancel_requested=True):
        run.refresh_from_db()
        raise NotCancellable(f"run {run.run_id} is {run.status} already")
    run.refresh_from_db()
    return run


def fail_run(run: ReportRun, error: str) -> ReportRun:
    """Record a run that could not start (e.g. no broker to read from)."""
    run.status, run.error, run.finished_at = RunStatus.FAILED, error, timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    return run


def get_schedule(report: str) -> PeriodicTask:
    """The report's periodic task (created with the default crontab if a flush removed it)."""
    found = PeriodicTask.objects.filter(name=schedule.TASK_NAMES[report]).select_related("crontab").first()
    return found or schedule.set_schedule(CrontabSchedule, PeriodicTask, report, schedule.DEFAULT_CRONTABS[report],
                                          enabled=True)


def set_schedule(report: str, expression: str, enabled: bool) -> PeriodicTask:
    return schedule.set_schedule(CrontabSchedule, PeriodicTask, report, expression, enabled)


def schedule_state(report: str) -> dict:
    periodic = get_schedule(report)
    return {"report": report, "crontab": schedule.crontab_expression(periodic), "enabled": periodic.enabled,
            "last_run_at": periodic.last_run_at}
