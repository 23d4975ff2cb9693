"""Open incidents of every alert source, for the console's Alerts page and the dashboard's "open alerts" tile:
consumer-lag incidents (`lag.LagIncident`, open while `closed_ms` is null, announced or not) and cluster
alerts (`ClusterAlert`, open from when they were announced — past their grace period — until resolved; one
still in its grace period is not an incident yet)."""

import datetime
from dataclasses import dataclass

from django.db.models import QuerySet

from controlplane.lag.models import LagIncident

from .models import ClusterAlert

LAG = "consumer-lag"


@dataclass(frozen=True)
class OpenIncident:
    source: str
    """`consumer-lag`, or the cluster alert's kind (broker-down, offline-partition, under-replicated-partition)."""
    subject: str
    """The consumer group, broker id or topic-partition."""
    status: str
    """The lag alert status (WARN, ERR); ERR for cluster alerts (announced as critical)."""
    detail: str
    since: datetime.datetime


def _open_lag() -> QuerySet:
    return LagIncident.objects.filter(closed_ms__isnull=True)


def _open_cluster() -> QuerySet:
    return ClusterAlert.objects.filter(opened_at__isnull=False, resolved_at__isnull=True)


def open_incidents() -> list[OpenIncident]:
    """Every open incident, the newest first."""
    lag = [OpenIncident(LAG, i.group, i.status,
                        f"announced {i.notified_status}" if i.notified_status
                        else "not announced yet (silenced or below every endpoint's threshold)",
                        i.started_at) for i in _open_lag()]
    cluster = [OpenIncident(a.kind, a.subject, "ERR", a.detail, a.opened_at) for a in _open_cluster()]
    return sorted([*lag, *cluster], key=lambda i: i.since, reverse=True)


def open_count() -> int:
    """How many incidents are open (one query)."""
    return _open_lag().order_by().values("pk").union(_open_cluster().order_by().values("pk"), all=True).count()
