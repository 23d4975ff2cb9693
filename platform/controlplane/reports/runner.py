"""Running one report: the job `python -m spark_jobs.<report>` as a subprocess, its progress relayed into the
`ReportRun` row, stopped on cancel or time limit.

The Celery worker never starts Spark itself (a JVM does not survive the prefork pool's fork, and `spark.stop()`
leaves it running): each run is its own process group — the job's Python driver, its JVM and the JVM's Python
workers — started in a new session, so stopping a run is one `killpg` (SIGTERM, SIGKILL after
`KILL_GRACE_S`). The job prints one JSON object per stdout line (`spark_jobs.progress`); Spark's log (stderr)
goes to `<reports dir>/logs/<run id>.log`. Exit status 0 = succeeded; anything else = failed, with the job's
`failed` event (one line) as the error, else the log's last line.

While the job runs, the row names its runner (host and pid) and job (`job_pid`, its process group) and the runner
writes a heartbeat every `HEARTBEAT_INTERVAL_S`: a runner that dies without finishing the run (its Celery worker
SIGKILLed, the machine rebooted) is found by `reaper.reap_orphaned_runs`, which fails the run and stops the job.
"""

import json
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from . import processes
from .models import Report, ReportRun, RunStatus
from .processes import RUN_ID_ENV

log = logging.getLogger(__name__)

JOB_MODULES = {Report.LAG: "spark_jobs.lag_report", Report.RETENTION: "spark_jobs.retention_report"}
CHECK_INTERVAL_S = 1.0
"""How often the runner looks for a cancel request and the time limit while the job is quiet (s)."""
KILL_GRACE_S = 10.0
"""Between SIGTERM and SIGKILL to the job's process group (s)."""
HEARTBEAT_INTERVAL_S = 10.0
"""How often the runner writes `heartbeat_at` while the job runs (s); far below the reaper's
`STROM_REPORT_HEARTBEAT_TIMEOUT_S`."""
PROGRESS_FIELDS = ("step", "step_index", "steps", "stages_done", "stages_total", "tasks_done", "tasks_total")


@dataclass(frozen=True)
class JobCommand:
    argv: list[str]
    env: dict[str, str]


def reports_dir() -> Path:
    return Path(settings.STROM_REPORTS_DIR)


def job_command(run: ReportRun, arguments: list[str]) -> JobCommand:
    """The job's command line: `arguments` are the report's own options (see `inputs.job_arguments`)."""
    argv = [sys.executable, "-m", JOB_MODULES[Report(run.report)], "--run-id", run.run_id,
            "--output", str(reports_dir()), "--master", settings.STROM_SPARK_MASTER, *arguments]
    env = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           **os.environ, "PYTHONUNBUFFERED": "1"}  # a cluster's workers may need their own PYSPARK_PYTHON
    return JobCommand(argv, env)


class ReportRunner:
    """Runs `command` for `run` (a queued row) to a final status. `time_limit_s` counts from the start."""

    def __init__(self, run: ReportRun, command: JobCommand, time_limit_s: float):
        self.run = run
        self.command = command
        self.time_limit_s = time_limit_s
        self.failure = ""

    def execute(self) -> ReportRun:
        run = self.run
        started = ReportRun.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, started_at=timezone.now(), heartbeat_at=timezone.now(),
            runner_host=socket.gethostname(), runner_pid=os.getpid())
        if not started:  # cancelled while queued (or a duplicate delivery of the task)
            run.refresh_from_db()
            return run
        run.refresh_from_db()
        log_path = reports_dir() / "logs" / f"{run.run_id}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        run.log_path = str(log_path)
        run.save(update_fields=["log_path"])
        with open(log_path, "wb") as stderr:
            process = subprocess.Popen(self.command.argv, env={**self.command.env, RUN_ID_ENV: run.run_id},
                                       cwd=settings.BASE_DIR, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=stderr, start_new_session=True)
            run.job_pid = process.pid
            run.save(update_fields=["job_pid"])
            try:
                outcome = self._follow(process)
            except BaseException as stopped:  # e.g. Celery's soft time limit, the worker's warm shutdown
                _stop(process)
                self.failure = f"the runner was stopped ({type(stopped).__name__}); so was the job"
                self._finish(RunStatus.FAILED, process.returncode, log_path)
                raise
            _stop(process)
        return self._finish(outcome, process.returncode, log_path)

    def _follow(self, process: subprocess.Popen) -> RunStatus | None:
        """Relay the job's events until its stdout closes; a cancel or the time limit stops it early and
        decides the outcome (returned), else None (the exit status decides)."""
        lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
        deadline = time.monotonic() + self.time_limit_s
        next_check = time.monotonic() + CHECK_INTERVAL_S
        next_heartbeat = time.monotonic() + HEARTBEAT_INTERVAL_S
        while True:
            try:
                line = lines.get(timeout=CHECK_INTERVAL_S)
            except queue.Empty:
                line = b""
            if line is None:
                return None
            if line:
                self._apply(line)
            if time.monotonic() >= next_heartbeat:
                next_heartbeat = time.monotonic() + HEARTBEAT_INTERVAL_S
                ReportRun.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + CHECK_INTERVAL_S
                if ReportRun.objects.filter(pk=self.run.pk, cancel_requested=True).exists():
                    return RunStatus.CANCELLED
                if time.monotonic() >= deadline:
                    self.failure = f"stopped after the time limit of {self.time_limit_s:g} s"
                    return RunStatus.FAILED

    def _apply(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            log.warning("report %s: not a progress line: %r", self.run.run_id, line[:200])
            return
        run, kind = self.run, event.get("event")
        if kind == "started":
            run.master = event.get("master", "")
            run.save(update_fields=["master"])
        elif kind == "progress":
            for field in PROGRESS_FIELDS:
                setattr(run, field, event.get(field, getattr(run, field)))
            run.fraction = max(run.fraction, min(1.0, float(event.get("fraction", 0.0))))
            run.save(update_fields=[*PROGRESS_FIELDS, "fraction"])
        elif kind == "warning":
            run.warnings = [*run.warnings, event.get("message", "")]
            run.save(update_fields=["warnings"])
        elif kind == "finished":
            run.rows = event.get("rows", {})
            run.fraction = 1.0
            run.save(update_fields=["rows", "fraction"])
        elif kind == "failed":
            self.failure = event.get("error", "")

    def _finish(self, outcome: RunStatus | None, returncode: int, log_path: Path) -> ReportRun:
        run = self.run
        if outcome is None:
            outcome = RunStatus.SUCCEEDED if returncode == 0 else RunStatus.FAILED
            if outcome == RunStatus.FAILED and not self.failure:
                self.failure = _last_line(log_path) or f"the job exited with status {returncode}"
        run.status = outcome
        run.error = self.failure if outcome == RunStatus.FAILED else ""
        run.finished_at = timezone.now()
        if outcome == RunStatus.SUCCEEDED:
            run.report_date = _report_date(run)
        run.save(update_fields=["status", "error", "finished_at", "report_date"])
        return run


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line.strip())
    lines.put(None)


def _stop(process: subprocess.Popen) -> None:
    """Stop the job's whole process group (JVM and Python workers included) and wait until none of it is left —
    the group is stopped even if the job has exited, in case the driver left children behind."""
    processes.stop_group(process.pid, KILL_GRACE_S)  # the leader, our child, is a zombie (not counted) until:
    process.wait()


def _last_line(path: Path) -> str:
    with open(path, "rb") as stream:
        stream.seek(max(0, path.stat().st_size - 4096))
        tail = stream.read().decode("utf-8", "replace").strip().splitlines()
    return tail[-1][:1000] if tail else ""


def _report_date(run: ReportRun) -> date | None:
    """The report date its manifest names (the partition of its outputs)."""
    from spark_jobs.results import ReportLayout

    manifest = ReportLayout(reports_dir(), run.report).manifest_path(run.run_id)
    try:
        return date.fromisoformat(json.loads(manifest.read_text())["report_date"])
    except (OSError, ValueError, KeyError):
        return None
