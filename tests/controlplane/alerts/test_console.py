"""The console's Alerts page: what a viewer sees (buttons disabled with the reason), and an operator adding an
endpoint (secret shown once), a threshold and a silence, sending a test and retrying a delivery; bad input
answers 400 with the form's errors and stores nothing."""

import pytest
from django.test import Client

from controlplane.access.actions import Role
from controlplane.alerts import outbox
from controlplane.alerts.models import Delivery, LagThreshold, Silence, WebhookEndpoint
from controlplane.audit.models import AuditEntry
from controlplane.lag.models import LagIncident
from tests.conftest import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def woken(monkeypatch):
    calls = []
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: calls.append(list(ids)))
    return calls


def logged_in(role: Role) -> Client:
    client = Client()
    client.force_login(user_with_role(f"u-{role.name.lower()}", role))
    return client


def test_a_viewer_sees_incidents_endpoints_and_deliveries_but_no_enabled_buttons():
    endpoint = WebhookEndpoint.objects.create(name="ops", url="https://h.example/hook")
    Delivery.objects.create(endpoint=endpoint, webhook_id="evt-1", event="open", subject="billing", url=endpoint.url,
                            method="POST", body="{}", state=Delivery.State.GAVE_UP, attempts=9, last_status_code=503)
    LagIncident.objects.create(incident_id="i1", cluster="local", group="billing", start_ms=1_700_000_000_000,
                               status="ERR", notified_status="ERR", notified_ms=1_700_000_000_000)
    page = logged_in(Role.VIEWER).get("/alerts/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "https://h.example/hook" in html and "gave_up" in html and "2023-11-14 22:13:20" in html
    assert 'data-action="manage_alerts"' in html and "Managing alerts needs the operator role" in html
    assert 'data-action="manage_alerts" class="small" disabled' in html


def test_an_operator_manages_alerts_from_the_console(woken, django_capture_on_commit_callbacks):
    operator = logged_in(Role.OPERATOR)
    added = operator.post("/alerts/endpoints/new/", {"name": "ops", "url": "https://h.example/hook",
                                                     "preset": "standard", "method": "POST", "headers": "",
                                                     "extras": "", "timeout_s": "10", "notify_threshold": "ERR",
                                                     "reminder_interval_s": "900"})
    endpoint = WebhookEndpoint.objects.get()
    assert added.status_code == 200 and endpoint.secret in added.content.decode()
    assert (endpoint.notify_threshold, endpoint.reminder_interval_s) == ("ERR", 900)
    assert "ERR only, reminded every 900 s" in added.content.decode()
    assert operator.get("/alerts/").content.decode().count(endpoint.secret) == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert operator.post(f"/alerts/endpoints/{endpoint.pk}/test/").status_code == 302
    delivery = Delivery.objects.get()
    assert delivery.event == "test" and woken == [[delivery.pk]]
    with django_capture_on_commit_callbacks(execute=True):
        assert operator.post(f"/alerts/deliveries/{delivery.pk}/retry/").status_code == 302
    assert operator.post("/alerts/thresholds/new/", {"group": "orders-*", "topic": "*",
                                                     "max_lag_seconds": "30"}).status_code == 302
    assert operator.post("/alerts/silences/new/", {"group": "batch-*", "minutes": "90"}).status_code == 302
    assert LagThreshold.objects.get().max_lag_seconds == 30
    assert Silence.objects.get().created_by == "u-operator"
    assert AuditEntry.objects.filter(action="manage_alerts", result="ok").count() == 5
    assert "secret" not in AuditEntry.objects.filter(target="webhook-endpoint:new").get().after


@pytest.mark.parametrize(("path", "data", "error"), [
    ("/alerts/endpoints/new/", {"name": "x", "url": "https://h.example/", "preset": "pagerduty", "method": "POST",
                                "timeout_s": "10", "notify_threshold": "WARN"}, "routing"),
    ("/alerts/endpoints/new/", {"name": "x", "url": "https://h.example/", "preset": "standard", "method": "POST",
                                "timeout_s": "10", "template_open": "{% if %}", "notify_threshold": "WARN"}, "line 1"),
    ("/alerts/endpoints/new/", {"name": "x", "url": "https://h.example/", "preset": "standard", "method": "POST",
                                "timeout_s": "10", "headers": "{nope"}, "not JSON"),
    ("/alerts/endpoints/new/", {"name": "x", "url": "https://h.example/", "preset": "standard", "method": "POST",
                                "timeout_s": "10", "notify_threshold": "WARN", "reminder_interval_s": "3"},
     "at least 10 seconds"),
    ("/alerts/thresholds/new/", {"group": "*", "topic": "*"}, "max_lag"),
])
def test_bad_input_is_400_with_the_reason(path, data, error):
    response = logged_in(Role.OPERATOR).post(path, data)
    assert response.status_code == 400 and error in response.content.decode()
    assert not WebhookEndpoint.objects.exists() and not LagThreshold.objects.exists()
