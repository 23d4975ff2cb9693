"""Celery tasks of the reports app. `run_report` goes to its own queue (`STROM_REPORTS_QUEUE`, one worker with
`-c 1`: each run is a Spark JVM of about 1 GB); `scheduled_report` is what beat calls."""

from celery import shared_task
from django.conf import settings

from controlplane.core.errors import KafkaApiError

from . import runner
from .inputs import job_arguments
from .models import ReportRun, RunStatus, Trigger
from .services import fail_run, start_run


@shared_task(name="controlplane.reports.run_report", soft_time_limit=settings.STROM_REPORT_TIME_LIMIT_S + 60)
def run_report(run_pk: int) -> str:
    """Run a queued report to its final status (returned). The runner enforces the time limit itself; Celery's
    soft limit is a backstop."""
    run = ReportRun.objects.get(pk=run_pk)
    if run.status != RunStatus.QUEUED:
        return run.status
    try:
        arguments = job_arguments(run, runner.reports_dir())
    except KafkaApiError as error:
        return fail_run(run, error.message).status
    command = runner.job_command(run, arguments)
    return runner.ReportRunner(run, command, settings.STROM_REPORT_TIME_LIMIT_S).execute().status


@shared_task(name="controlplane.reports.scheduled_report")
def scheduled_report(report: str) -> str:
    """Queue a run of `report` with its default parameters; returns its run id."""
    return start_run(report, {}, Trigger.SCHEDULE).run_id
