"""The runner against a stand-in job process (`fake_job.py`, speaking the jobs' protocol): progress relayed into the
run row, the outcome and error recorded, cancel and the time limit stopping the job's whole process group."""

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from controlplane.reports import services
from controlplane.reports.models import Report, ReportRun, RunStatus, new_run_id
from controlplane.reports.processes import alive
from controlplane.reports.runner import JobCommand, ReportRunner
from tests.support.polling import wait_until

FAKE_JOB = Path(__file__).with_name("fake_job.py")


@pytest.fixture
def reports_dir(settings, tmp_path):
    settings.STROM_REPORTS_DIR = tmp_path
    return tmp_path


def run_fake(behaviour: str, reports_dir: Path, time_limit_s: float = 60, *extra: str) -> ReportRun:
    run = ReportRun.objects.create(report=Report.LAG, run_id=new_run_id(Report.LAG))  # queued, not sent to Celery
    command = JobCommand([sys.executable, str(FAKE_JOB), "--behaviour", behaviour, "--run-id", run.run_id,
                          "--output", str(reports_dir), *extra], dict(os.environ))
    return ReportRunner(run, command, time_limit_s).execute()


@pytest.mark.django_db
def test_a_successful_run_records_progress_rows_warnings_and_report_date(reports_dir):
    run = run_fake("succeed", reports_dir)

    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.error == ""
    assert (run.master, run.step, run.step_index, run.steps) == ("local[2]", "groups", 1, 2)
    assert (run.stages_done, run.stages_total, run.tasks_done, run.tasks_total) == (1, 2, 3, 4)
    assert run.fraction == 1.0
    assert run.rows == {"partitions": 7, "groups": 2} and run.total_rows == 9
    assert run.warnings == ["no lag samples in the period"]
    assert str(run.report_date) == "2026-11-23"
    assert run.started_at <= run.heartbeat_at <= run.finished_at
    assert (run.runner_host, run.runner_pid) == (socket.gethostname(), os.getpid()) and run.job_pid > 0
    assert "Running Spark version" in Path(run.log_path).read_text()


@pytest.mark.django_db
def test_a_failed_event_is_the_error(reports_dir):
    run = run_fake("fail", reports_dir)
    assert (run.status, run.error) == (RunStatus.FAILED, "cannot reach the brokers at 127.0.0.1:1")
    assert run.fraction == 0.375 and run.report_date is None


@pytest.mark.django_db
def test_a_crash_without_an_event_reports_the_logs_last_line(reports_dir):
    run = run_fake("crash", reports_dir)
    assert (run.status, run.error) == (RunStatus.FAILED, "RuntimeError: the JVM died")


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_the_job_and_its_children(reports_dir):
    pid_file = reports_dir / "child.pid"

    def cancel_once_started():
        run = wait_until(lambda: ReportRun.objects.filter(fraction__gt=0).first(), message="progress")
        wait_until(pid_file.exists, message="the job's child")
        services.cancel_run(run)

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    run = run_fake("hang", reports_dir, 60, "--pid-file", str(pid_file))
    canceller.join()

    assert (run.status, run.error) == (RunStatus.CANCELLED, "")
    assert run.finished_at is not None
    assert not alive(int(pid_file.read_text())), "the job's child survived the cancel"


@pytest.mark.django_db
def test_the_time_limit_fails_the_run_and_stops_the_job(reports_dir):
    pid_file = reports_dir / "child.pid"
    run = run_fake("hang", reports_dir, 10, "--pid-file", str(pid_file))  # long enough to start its child under load

    assert (run.status, run.error) == (RunStatus.FAILED, "stopped after the time limit of 10 s")
    assert not alive(int(pid_file.read_text()))


@pytest.mark.django_db
def test_a_run_cancelled_while_queued_never_starts(reports_dir):
    run = ReportRun.objects.create(report=Report.RETENTION, run_id=new_run_id(Report.RETENTION))
    services.cancel_run(run)
    command = JobCommand([sys.executable, "-c", "raise SystemExit('must not run')"], dict(os.environ))

    run = ReportRunner(run, command, 60).execute()

    assert run.status == RunStatus.CANCELLED and run.started_at is None and run.log_path == ""
    with pytest.raises(services.NotCancellable, match="is cancelled already"):
        services.cancel_run(run)
