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


EDIT = {"name": "ops", "url": "https://h.example/v2", "preset": "standard", "method": "PUT", "headers": "",
        "extras": "", "timeout_s": "10", "notify_threshold": "ERR", "reminder_interval_s": "600", "enabled": "on"}


def test_an_operator_edits_an_endpoint_keeping_its_secret_audited_once():
    endpoint = WebhookEndpoint.objects.create(name="ops", url="https://h.example/hook", enabled=False,
                                              disabled_reason="the receiver answered 410 Gone")
    operator = logged_in(Role.OPERATOR)
    page = operator.get(f"/alerts/endpoints/{endpoint.pk}/").content.decode()
    assert 'value="https://h.example/hook"' in page and endpoint.secret not in page
    assert operator.post(f"/alerts/endpoints/{endpoint.pk}/edit/", EDIT).status_code == 302
    edited = WebhookEndpoint.objects.get()
    assert (edited.url, edited.method, edited.notify_threshold, edited.reminder_interval_s) == (
        "https://h.example/v2", "PUT", "ERR", 600)
    assert edited.secret == endpoint.secret and edited.enabled and edited.disabled_reason == ""
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.result, entry.target) == ("manage_alerts", "ok", f"webhook-endpoint:{endpoint.pk}")
    assert (entry.before["url"], entry.after["url"]) == ("https://h.example/hook", "https://h.example/v2")
    assert "secret" not in entry.before and "secret" not in entry.after


@pytest.mark.parametrize(("secret_fields", "replaced"), [
    ({"new_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ({"generate_secret": "on"}, None),
])
def test_an_edit_replaces_the_secret_only_when_asked(secret_fields, replaced):
    endpoint = WebhookEndpoint.objects.create(name="ops", url="https://h.example/hook")
    response = logged_in(Role.OPERATOR).post(f"/alerts/endpoints/{endpoint.pk}/edit/", {**EDIT, **secret_fields})
    secret = WebhookEndpoint.objects.get().secret
    assert secret != endpoint.secret and secret.startswith("whsec_")
    if replaced:
        assert secret == replaced and response.status_code == 302
    else:  # generated: shown this once
        assert response.status_code == 200 and secret in response.content.decode()
    assert AuditEntry.objects.get().after["secret"] == "replaced"


@pytest.mark.parametrize(("data", "error"), [
    ({**EDIT, "reminder_interval_s": "5"}, "at least 10 seconds"),
    ({**EDIT, "template_close": "{{ Group "}, "line 1"),
    ({**EDIT, "new_secret": "hunter2"}, "whsec_ and base64"),
    ({**EDIT, "new_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "generate_secret": "on"}, "not both"),
])
def test_a_bad_edit_is_400_with_the_reason_and_changes_nothing(data, error):
    endpoint = WebhookEndpoint.objects.create(name="ops", url="https://h.example/hook")
    response = logged_in(Role.OPERATOR).post(f"/alerts/endpoints/{endpoint.pk}/edit/", data)
    assert response.status_code == 400 and error in response.content.decode()
    kept = WebhookEndpoint.objects.get()
    assert (kept.url, kept.secret, kept.reminder_interval_s) == (endpoint.url, endpoint.secret, None)
    assert not AuditEntry.objects.exists()


def test_a_viewer_sees_an_endpoint_but_may_not_save_it():
    endpoint = WebhookEndpoint.objects.create(name="ops", url="https://h.example/hook")
    viewer = logged_in(Role.VIEWER)
    page = viewer.get(f"/alerts/endpoints/{endpoint.pk}/").content.decode()
    assert 'value="https://h.example/hook"' in page and "Managing alerts needs the operator role" in page
    assert viewer.post(f"/alerts/endpoints/{endpoint.pk}/edit/", EDIT).status_code == 403
    assert WebhookEndpoint.objects.get().url == "https://h.example/hook"
    assert AuditEntry.objects.get().result == "refused"


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
