"""Report runs: one row per run of a Spark report job (`spark_jobs.lag_report` / `retention_report`), from
queued to a final status, with the progress its job reports. The outputs themselves (Parquet, CSV, the
manifest) live on disk under `settings.STROM_REPORTS_DIR` (`spark_jobs.results` reads them)."""

import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


class Report(models.TextChoices):
    LAG = "lag", "Lag report"
    RETENTION = "retention", "Retention report"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_STATUSES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class Trigger(models.TextChoices):
    MANUAL = "manual"
    SCHEDULE = "schedule"


def new_run_id(report: str) -> str:
    """Unique across databases too (the outputs outlive a reset database): report, UTC time, random suffix."""
    return f"{report}-{timezone.now():%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


class ReportRun(models.Model):
    """One run. Invariants: `started_at` is set once the job process starts (status running or later);
    `finished_at` once it reached a final status; `fraction` in [0, 1] never decreases while running; a running
    run names its runner (`runner_host`, `runner_pid`) and, once started, its job's process group (`job_pid`),
    and its `heartbeat_at` is at most `runner.HEARTBEAT_INTERVAL_S` old while that runner lives."""

    report = models.CharField(max_length=20, choices=Report.choices)
    run_id = models.CharField(max_length=100, unique=True, help_text="the job's --run-id (names its output dirs)")
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    parameters = models.JSONField(default=dict, blank=True, help_text="job options, e.g. {\"period_hours\": 24}")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    cancel_requested = models.BooleanField(default=False, help_text="the runner stops the job at its next check")
    # Who runs it, for the orphan reaper (reaper.py).
    runner_host = models.CharField(max_length=255, blank=True, help_text="host name of the runner's Celery worker")
    runner_pid = models.IntegerField(null=True, blank=True, help_text="pid of the process running the runner")
    job_pid = models.IntegerField(null=True, blank=True, help_text="the job's pid = its process group id")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="the runner's last sign of life")
    # Progress, as the job's JSON lines report it (spark_jobs.progress).
    step = models.CharField(max_length=50, blank=True)
    step_index = models.IntegerField(default=0)
    steps = models.IntegerField(default=0)
    stages_done = models.IntegerField(default=0)
    stages_total = models.IntegerField(default=0)
    tasks_done = models.IntegerField(default=0)
    tasks_total = models.IntegerField(default=0)
    fraction = models.FloatField(default=0.0)
    # Outcome.
    master = models.CharField(max_length=200, blank=True, help_text="the Spark master it ran on")
    report_date = models.DateField(null=True, blank=True, help_text="partition of its outputs")
    rows = models.JSONField(default=dict, blank=True, help_text="{table: rows written}")
    warnings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    log_path = models.CharField(max_length=500, blank=True, help_text="the job's stderr (Spark's log)")

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["report", "-created_at"], name="reports_run_report_created")]

    def __str__(self) -> str:
        return self.run_id

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to finish (to now while running); None before it started."""
        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())
