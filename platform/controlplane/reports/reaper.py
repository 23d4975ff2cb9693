"""Failing report runs whose runner is gone, and stopping their orphaned Spark jobs.

A runner records the run as failed itself when it is stopped (a warm shutdown, Celery's soft time limit); when
its process dies outright — the Celery worker SIGKILLed or OOM-killed, the machine rebooted — the run would stay
`running` forever and its job (a new session, so not killed with the worker) would go on. `reap_orphaned_runs`,
run by beat every minute (`schedule.REAPER_EVERY_S`) and when a Celery worker starts, fails a running run whose runner

- ran on this host and its process is gone (`runner_pid` not alive): at once;
- wrote no heartbeat for `STROM_REPORT_HEARTBEAT_TIMEOUT_S` (any host: a runner elsewhere, or a hung one),

with the reason as its error, after stopping the job's process group if it runs on this host and is still that
run's (`processes.run_group`). A job on another host can only be named in the error.
"""

import logging
import socket
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from . import processes
from .models import ReportRun, RunStatus
from .runner import KILL_GRACE_S

log = logging.getLogger(__name__)

def reap_orphaned_runs(now: datetime | None = None) -> list[ReportRun]:
    """Fail every orphaned running run (see the module's rules); returns them, their `error` set."""
    now = now or timezone.now()
    host = socket.gethostname()
    reaped = []
    for run in ReportRun.objects.filter(status=RunStatus.RUNNING):
        reason = orphan_reason(run, host, now)
        if reason is None:
            continue
        error = f"{reason}; {_stop_job(run, host)}"
        failed = ReportRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED, error=error, finished_at=now)
        if failed:  # else its runner finished it meanwhile
            log.warning("report run %s failed: %s", run.run_id, error)
            run.refresh_from_db()
            reaped.append(run)
    return reaped


def orphan_reason(run: ReportRun, host: str, now: datetime) -> str | None:
    """Why `run` (running) has no runner any more, seen from `host` at `now`; None while its runner lives."""
    runner = f"its runner (pid {run.runner_pid} on {run.runner_host or 'an unknown host'})"
    if run.runner_host == host and run.runner_pid is not None and not processes.alive(run.runner_pid):
        return f"{runner} died before the run finished (e.g. its Celery worker was killed)"
    last_sign = run.heartbeat_at or run.started_at or run.created_at
    silent_s = (now - last_sign).total_seconds()
    if silent_s > settings.STROM_REPORT_HEARTBEAT_TIMEOUT_S:
        return (f"no heartbeat from {runner} for {silent_s:.0f} s (the limit is "
                f"{settings.STROM_REPORT_HEARTBEAT_TIMEOUT_S} s): its Celery worker is gone or stuck")
    return None


def _stop_job(run: ReportRun, host: str) -> str:
    """Stop the run's job if it still runs here; says what became of it."""
    if run.job_pid is None:
        return "its job had not started"
    if run.runner_host != host:
        return (f"its job (process group {run.job_pid} on {run.runner_host or 'an unknown host'}) cannot be "
                f"stopped from {host}: stop it there if it still runs")
    if not processes.run_group(run.job_pid, run.run_id):
        return "its job had ended"
    if processes.stop_group(run.job_pid, KILL_GRACE_S):
        return f"its job's processes (process group {run.job_pid}) were killed"
    return f"its job's processes (process group {run.job_pid}) could not be killed"

