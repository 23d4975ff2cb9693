"""What the lag monitor (`manage.py run_lag_monitor`) keeps across restarts: its evaluation state (one
opaque blob, see monitoring.persistence) and its incidents (open ones drive announcements; closed ones are
the console's history)."""

import datetime

from django.db import models


class MonitorState(models.Model):
    """The monitor's windows, head rings and `__consumer_offsets` positions, one row per cluster name."""

    cluster = models.CharField(max_length=200, unique=True)
    state = models.BinaryField()
    saved_at = models.DateTimeField(auto_now=True)


class LagIncident(models.Model):
    """A consumer group's alert from OPEN to CLOSE (`closed_ms` null while open). Times in ms since the epoch.
    `notified` is what each endpoint was last told ({str(endpoint pk): [status, ms]}); `notified_status`
    and `notified_ms` repeat the latest of those for lists."""

    incident_id = models.CharField(max_length=64, unique=True)
    cluster = models.CharField(max_length=200)
    group = models.CharField(max_length=300)
    start_ms = models.BigIntegerField()
    status = models.CharField(max_length=10)
    notified_status = models.CharField(max_length=10, blank=True)
    notified_ms = models.BigIntegerField(default=0)
    notified = models.JSONField(default=dict, blank=True)
    closed_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ("-start_ms",)
        indexes = [models.Index(fields=("cluster", "closed_ms"))]

    def __str__(self) -> str:
        return f"{self.group} {self.status} ({'open' if self.closed_ms is None else 'closed'})"

    @property
    def started_at(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.start_ms / 1000, datetime.UTC)
