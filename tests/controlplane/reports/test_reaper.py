"""Runs whose runner died: a runner process SIGKILLed mid-run leaves its run `running` and its job (a process group
of its own) going; the reaper fails the run with the reason and kills the orphaned job. Stale heartbeats fail runs
of any host; a live runner's run is left alone."""

import os
import signal
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from controlplane.reports import reaper
from controlplane.reports.models import Report, ReportRun, RunStatus, new_run_id
from controlplane.reports.processes import alive
from controlplane.reports.schedule import REAPER_TASK, REAPER_TASK_NAME
from tests.support.celery_processes import database_url
from tests.support.polling import wait_until

RUNNER_PROCESS = Path(__file__).with_name("runner_process.py")


@pytest.mark.django_db(transaction=True)
def test_a_killed_runner_leaves_a_run_the_reaper_fails_and_its_job_is_killed(tmp_path):
    run = ReportRun.objects.create(report=Report.LAG, run_id=new_run_id(Report.LAG))
    pid_file = tmp_path / "child.pid"
    runner = subprocess.Popen([sys.executable, str(RUNNER_PROCESS), str(run.pk), str(tmp_path), str(pid_file)],
                              env={**os.environ, "DATABASE_URL": database_url()}, start_new_session=True)
    try:
        wait_until(pid_file.exists, timeout_s=60, message="the job's child process")
        run.refresh_from_db()
        job_child = int(pid_file.read_text())
        assert run.status == RunStatus.RUNNING and run.runner_pid == runner.pid
        assert run.runner_host == socket.gethostname() and alive(run.job_pid)
        assert reaper.reap_orphaned_runs() == []  # its runner lives

        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        assert alive(run.job_pid) and alive(job_child), "the job outlives its runner (it has its own session)"
        run.refresh_from_db()
        assert run.status == RunStatus.RUNNING
        reaped = wait_until(reaper.reap_orphaned_runs, timeout_s=30, message="the run reaped")
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()

    run.refresh_from_db()
    assert [r.pk for r in reaped] == [run.pk] and run.status == RunStatus.FAILED and run.finished_at is not None
    assert run.error == (f"its runner (pid {runner.pid} on {socket.gethostname()}) died before the run finished "
                         f"(e.g. its Celery worker was killed); its job's processes (process group {run.job_pid}) "
                         "were killed")
    wait_until(lambda: not alive(job_child) and not alive(run.job_pid), timeout_s=10, message="the job's end")
    assert reaper.reap_orphaned_runs() == []


def running(heartbeat_age_s: float, host: str, pid: int | None = None, job_pid: int | None = None) -> ReportRun:
    now = timezone.now()
    return ReportRun.objects.create(report=Report.RETENTION, run_id=new_run_id(Report.RETENTION),
                                    status=RunStatus.RUNNING, started_at=now - timedelta(hours=1), runner_host=host,
                                    runner_pid=pid, job_pid=job_pid,
                                    heartbeat_at=now - timedelta(seconds=heartbeat_age_s))


@pytest.mark.django_db
def test_runs_are_failed_on_a_stale_heartbeat_or_a_dead_local_runner_only(settings):
    settings.STROM_REPORT_HEARTBEAT_TIMEOUT_S = 120
    here = socket.gethostname()
    dead_pid = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_pid.wait()
    live_here = running(5, here, os.getpid())
    live_elsewhere = running(100, "elsewhere", 4242, job_pid=4243)
    stale_elsewhere = running(300, "elsewhere", 4242, job_pid=4243)
    stale_here_not_started = running(300, here, os.getpid())
    dead_here = running(5, here, dead_pid.pid)

    reaped = {run.pk: run.error for run in reaper.reap_orphaned_runs()}

    assert set(reaped) == {stale_elsewhere.pk, stale_here_not_started.pk, dead_here.pk}
    assert reaped[stale_elsewhere.pk].startswith("no heartbeat from its runner (pid 4242 on elsewhere) for 300 s "
                                                 "(the limit is 120 s): its Celery worker is gone or stuck; ")
    assert reaped[stale_elsewhere.pk].endswith(f"its job (process group 4243 on elsewhere) cannot be stopped from "
                                               f"{here}: stop it there if it still runs")
    assert reaped[stale_here_not_started.pk].endswith("; its job had not started")
    assert reaped[dead_here.pk] == (f"its runner (pid {dead_pid.pid} on {here}) died before the run finished "
                                    "(e.g. its Celery worker was killed); its job had not started")
    for run in (live_here, live_elsewhere):
        run.refresh_from_db()
        assert run.status == RunStatus.RUNNING and run.error == ""


@pytest.mark.django_db
def test_a_reused_job_pid_is_not_killed():
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        run = running(300, socket.gethostname(), os.getpid(), job_pid=stranger.pid)
        [reaped] = reaper.reap_orphaned_runs()
        assert reaped.pk == run.pk and reaped.error.endswith("; its job had ended")
        assert stranger.poll() is None, "a process of another run (or program) was killed"
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.django_db
def test_beat_reaps_every_minute():
    periodic = PeriodicTask.objects.get(name=REAPER_TASK_NAME)
    assert (periodic.task, periodic.enabled, periodic.interval.every, periodic.interval.period) == (
        REAPER_TASK, True, 60, "seconds")
