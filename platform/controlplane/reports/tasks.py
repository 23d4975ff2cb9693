"""Celery tasks of the reports app. `run_report` goes to its own queue (`STROM_REPORTS_QUEUE`, one worker with
`-c 1`: each run is a Spark JVM of about 1 GB); `scheduled_report` and `reap_orphaned_runs` are what beat calls.
A worker that starts also reaps: a run whose runner died with the previous worker process fails at once."""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from controlplane.core.errors import KafkaApiError

from . import reaper, runner, schedule
from .inputs import job_arguments
from .models import ReportRun, RunStatus, Trigger
from .services import QueueUnavailable, fail_run, start_run

log = logging.getLogger(__name__)


@shared_task(name="controlplane.reports.run_report", soft_time_limit=settings.STROM_REPORT_TIME_LIMIT_S + 60,
             ignore_result=True)
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
    try:
        return start_run(report, {}, Trigger.SCHEDULE).run_id
    except QueueUnavailable as unavailable:  # recorded failed, with the reason
        log.error("scheduled %s report %s", report, unavailable)
        return unavailable.run.run_id


@shared_task(name=schedule.REAPER_TASK, ignore_result=True)
def reap_orphaned_runs() -> list[str]:
    """Fail running runs whose runner is gone (see `reaper`); returns their run ids."""
    return [run.run_id for run in reaper.reap_orphaned_runs()]


@worker_ready.connect
def reap_on_worker_start(**_) -> None:
    try:
        reaper.reap_orphaned_runs()
    except Exception:  # a worker starting before its database is reachable must still start
        log.exception("could not look for orphaned report runs")
