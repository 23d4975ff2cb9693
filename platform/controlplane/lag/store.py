"""The ORM's side of the lag monitor: `monitoring.persistence.MonitorStore` on `MonitorState` and
`LagIncident`, the sink handing announcements to the alerts outbox, and the operator-edited thresholds and
silences the monitor asks for once per evaluation round. Everything here runs on the monitor's threads,
so each call starts by dropping a connection the database closed meanwhile."""

from collections.abc import Sequence

from django.db import close_old_connections
from django.utils import timezone

from controlplane.alerts import outbox
from controlplane.alerts.models import LagThreshold
from controlplane.alerts.models import Silence as SilenceRow
from monitoring.config import Threshold
from monitoring.model import Status
from monitoring.notifier.incidents import Incident, Notification, Silence

from .models import LagIncident, MonitorState


class OrmMonitorStore:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def load_state(self) -> bytes | None:
        close_old_connections()
        row = MonitorState.objects.filter(cluster=self.cluster).first()
        return bytes(row.state) if row else None

    def save_state(self, state: bytes) -> None:
        close_old_connections()
        MonitorState.objects.update_or_create(cluster=self.cluster, defaults={"state": state})

    def open_incidents(self) -> list[Incident]:
        close_old_connections()
        return [Incident(id=row.incident_id, cluster=row.cluster, group=row.group, start_ms=row.start_ms,
                         status=Status[row.status],
                         notified_status=Status[row.notified_status] if row.notified_status else None,
                         notified_ms=row.notified_ms)
                for row in LagIncident.objects.filter(cluster=self.cluster, closed_ms__isnull=True)]

    def save_incident(self, incident: Incident) -> None:
        close_old_connections()
        LagIncident.objects.update_or_create(incident_id=incident.id, defaults={
            "cluster": incident.cluster, "group": incident.group, "start_ms": incident.start_ms,
            "status": incident.status.name,
            "notified_status": incident.notified_status.name if incident.notified_status else "",
            "notified_ms": incident.notified_ms})

    def close_incident(self, incident: Incident, closed_ms: int) -> None:
        self.save_incident(incident)
        LagIncident.objects.filter(incident_id=incident.id).update(closed_ms=closed_ms)


class OutboxSink:
    """Announcements → one pending delivery per matching endpoint (controlplane.alerts.outbox)."""

    def deliver(self, notifications: Sequence[Notification]) -> None:
        close_old_connections()
        outbox.enqueue(notifications)


def thresholds(configured: Sequence[Threshold] = ()) -> list[Threshold]:
    """The configuration's thresholds and every `LagThreshold` row."""
    close_old_connections()
    return [*configured, *(Threshold(t.group, t.topic, t.max_lag, t.max_lag_seconds)
                           for t in LagThreshold.objects.all())]


def silences() -> list[Silence]:
    """Silences not yet over."""
    close_old_connections()
    return [Silence(group=s.group, starts_ms=int(s.starts_at.timestamp() * 1000),
                    ends_ms=int(s.ends_at.timestamp() * 1000), comment=s.comment)
            for s in SilenceRow.objects.filter(ends_at__gt=timezone.now())]
