"""The ORM's side of the lag monitor: `monitoring.persistence.MonitorStore` on `MonitorState` and
`LagIncident`, the sink handing announcements to the alerts outbox, and what the monitor asks for once per
evaluation round: the operator-edited thresholds, silences and endpoints' notification policies. Everything
here runs on the monitor's threads (a few calls per evaluation round), so each call opens its thread's
database connection and closes it again (`in_own_connection`): a database restart costs nothing, and no
thread leaves a connection behind."""

import functools
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.db import connection, transaction
from django.utils import timezone

from controlplane.alerts import outbox
from controlplane.alerts.models import LagThreshold, WebhookEndpoint
from controlplane.alerts.models import Silence as SilenceRow
from monitoring.config import Threshold
from monitoring.model import Status
from monitoring.notifier.incidents import Incident, Notification, NotifyPolicy, Silence
from monitoring.persistence import notified_from_dict, notified_to_dict

from .models import LagIncident, MonitorState

F = TypeVar("F", bound=Callable)


def in_own_connection(function: F) -> F:
    """Run `function` on a fresh connection of this thread, closed afterwards (except on the main thread,
    where Django manages it)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            return function(*args, **kwargs)
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()

    return wrapper


class OrmMonitorStore:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    @in_own_connection
    def load_state(self) -> bytes | None:
        row = MonitorState.objects.filter(cluster=self.cluster).first()
        return bytes(row.state) if row else None

    @in_own_connection
    def save_state(self, state: bytes) -> None:
        MonitorState.objects.update_or_create(cluster=self.cluster, defaults={"state": state})

    @in_own_connection
    def open_incidents(self) -> list[Incident]:
        return [Incident(id=row.incident_id, cluster=row.cluster, group=row.group, start_ms=row.start_ms,
                         status=Status[row.status], notified=notified_from_dict(row.notified))
                for row in LagIncident.objects.filter(cluster=self.cluster, closed_ms__isnull=True)]

    @in_own_connection
    def update_incidents(self, saved: Sequence[Incident], closed: Sequence[tuple[Incident, int]]) -> None:
        """One transaction of upserts by `incident_id` (a few statements for any number of incidents)."""
        rows = [_row(incident, None) for incident in saved]
        rows += [_row(incident, closed_ms) for incident, closed_ms in closed]
        with transaction.atomic():
            LagIncident.objects.bulk_create(rows, batch_size=500, update_conflicts=True,
                                            unique_fields=["incident_id"], update_fields=_UPDATED_FIELDS)


_UPDATED_FIELDS = ["cluster", "group", "start_ms", "status", "notified_status", "notified_ms", "notified",
                   "closed_ms"]


def _row(incident: Incident, closed_ms: int | None) -> LagIncident:
    return LagIncident(incident_id=incident.id, cluster=incident.cluster, group=incident.group,
                       start_ms=incident.start_ms, status=incident.status.name,
                       notified_status=incident.notified_status.name if incident.notified_status else "",
                       notified_ms=incident.notified_ms, notified=notified_to_dict(incident.notified),
                       closed_ms=closed_ms)


class OutboxSink:
    """Announcements → one pending delivery per matching endpoint (controlplane.alerts.outbox)."""

    @in_own_connection
    def deliver(self, notifications: Sequence[Notification]) -> None:
        outbox.enqueue(notifications)


@in_own_connection
def thresholds(configured: Sequence[Threshold] = ()) -> list[Threshold]:
    """The configuration's thresholds and every `LagThreshold` row."""
    return [*configured, *(Threshold(t.group, t.topic, t.max_lag, t.max_lag_seconds)
                           for t in LagThreshold.objects.all())]


@in_own_connection
def policies() -> dict[str, NotifyPolicy]:
    """Each enabled endpoint's notification rules, by its subscriber key (`str(pk)`, see outbox.enqueue)."""
    return {str(e.pk): e.notify_policy() for e in WebhookEndpoint.objects.filter(enabled=True)}


@in_own_connection
def silences() -> list[Silence]:
    """Silences not yet over."""
    return [Silence(group=s.group, starts_ms=int(s.starts_at.timestamp() * 1000),
                    ends_ms=int(s.ends_at.timestamp() * 1000), comment=s.comment)
            for s in SilenceRow.objects.filter(ends_at__gt=timezone.now())]
