"""Open incidents of every source (controlplane.alerts.incidents): lag incidents until closed and cluster alerts
once announced until resolved, listed on the Alerts page (cluster ones through the real beat check) and counted
by the dashboard's "open alerts" tile in one query."""

import datetime

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from controlplane.access.actions import Role
from controlplane.alerts import cluster_alerts, outbox
from controlplane.alerts.incidents import open_count, open_incidents
from controlplane.alerts.models import ClusterAlert
from controlplane.dashboard.data_source import MetadataStoreDataSource
from controlplane.lag.models import LagIncident
from tests.conftest import user_with_role

pytestmark = pytest.mark.django_db
T0_MS = 1_700_000_000_000


def lag_incident(group: str, closed_ms: int | None = None, notified: str = "") -> LagIncident:
    return LagIncident.objects.create(incident_id=f"i-{group}", cluster="local", group=group, start_ms=T0_MS,
                                      status="ERR", notified_status=notified, closed_ms=closed_ms)


def test_open_lag_incidents_and_announced_cluster_alerts_are_listed_and_counted(cluster, settings, monkeypatch):
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: None)
    settings.STROM_ALERT_BROKER_DOWN_GRACE_S, settings.STROM_ALERT_UNDER_REPLICATED_GRACE_S = 30, 60
    lag_incident("billing", notified="ERR")
    lag_incident("etl")  # open, nobody told yet: still an incident
    lag_incident("old", closed_ms=T0_MS + 1)
    # conftest `cluster`: orders-2 offline (announced at once); broker 3 down and orders-1 under-replicated
    # stay in their grace periods
    cluster_alerts.check(timezone.now())
    ClusterAlert.objects.create(key="broker-down:9", kind="broker-down", subject="9", alert_id="gone",
                                first_seen_at=timezone.now(), opened_at=timezone.now(),
                                resolved_at=timezone.now())
    listed = {(i.source, i.subject, i.status) for i in open_incidents()}
    assert listed == {("consumer-lag", "billing", "ERR"), ("consumer-lag", "etl", "ERR"),
                      ("offline-partition", "orders-2", "ERR")}
    with CaptureQueriesContext(connection) as queries:
        assert open_count() == 3
    assert len(queries) == 1
    assert MetadataStoreDataSource().cluster_summary().open_alerts == 3
    client = Client()
    client.force_login(user_with_role("vic", Role.VIEWER))
    html = client.get("/alerts/").content.decode()
    assert 'href="/topics/orders/">orders-2</a>' in html and 'href="/groups/billing/">billing</a>' in html
    assert "announced ERR" in html and "not announced yet" in html and "no running leader" in html
    cluster_alerts.check(timezone.now() + datetime.timedelta(seconds=61))  # past both grace periods
    assert {i.source for i in open_incidents()} == {"consumer-lag", "offline-partition", "broker-down",
                                                    "under-replicated-partition"}
    assert MetadataStoreDataSource().cluster_summary().open_alerts == 5


def test_nothing_open_counts_zero():
    lag_incident("old", closed_ms=T0_MS + 1)
    assert open_incidents() == [] and open_count() == 0
