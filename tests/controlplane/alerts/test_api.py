"""Alerting over REST: endpoints (secret shown once, validation with 400s), send-test and retry through the
outbox, thresholds and silences; every change needs manage_alerts (operator) and is audited without secrets."""

import pytest
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.alerts import outbox
from controlplane.alerts.models import Delivery, LagThreshold, WebhookEndpoint
from controlplane.audit.models import AuditEntry
from monitoring.model import Status
from monitoring.notifier.incidents import NotifyPolicy
from tests.conftest import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def woken(monkeypatch):
    calls = []
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: calls.append(list(ids)))
    return calls


def client(role: Role) -> APIClient:
    api = APIClient()
    api.force_authenticate(user_with_role(f"u-{role.name.lower()}", role))
    return api


def test_an_operator_creates_an_endpoint_and_sees_its_secret_once():
    operator = client(Role.OPERATOR)
    created = operator.post("/api/alerts/endpoints/", {"name": "ops", "url": "https://hooks.example/strom",
                                                       "headers": {"X-Team": "data"}}, format="json")
    assert created.status_code == 201, created.data
    assert created.data["secret"].startswith("whsec_")
    assert WebhookEndpoint.objects.get(name="ops").secret == created.data["secret"]
    listed = operator.get("/api/alerts/endpoints/").data["results"]
    assert [e["name"] for e in listed] == ["ops"] and "secret" not in listed[0]
    entry = AuditEntry.objects.get(action="manage_alerts")
    assert (entry.actor, entry.result, entry.target) == ("u-operator", "ok", "webhook-endpoint:new")
    assert entry.after["url"] == "https://hooks.example/strom" and "secret" not in entry.after


@pytest.mark.parametrize(("body", "field"), [
    ({"template_open": "{{ Group "}, "template_open"),
    ({"preset": "pagerduty"}, "routing_key"),
    ({"headers": {"X-N": 5}}, "headers"),
    ({"group_allowlist": "(["}, "group_allowlist"),
    ({"url": "not a url"}, "url"),
    ({"reminder_interval_s": 5}, "reminder_interval_s"),
    ({"reminder_interval_s": -60}, "reminder_interval_s"),
    ({"notify_threshold": "STOP"}, "notify_threshold"),
])
def test_bad_endpoints_are_400_with_the_field(body, field):
    response = client(Role.OPERATOR).post("/api/alerts/endpoints/", {"name": "x", "url": "https://h.example/",
                                                                      **body}, format="json")
    assert response.status_code == 400 and field in response.data, response.data
    assert not WebhookEndpoint.objects.exists()


def test_the_notify_threshold_and_reminder_interval_are_endpoint_fields_patched_and_audited():
    operator = client(Role.OPERATOR)
    created = operator.post("/api/alerts/endpoints/", {"name": "pager", "url": "https://h.example/"}, format="json")
    assert (created.data["notify_threshold"], created.data["reminder_interval_s"]) == ("WARN", None)
    patched = operator.patch(f"/api/alerts/endpoints/{created.data['id']}/",
                             {"notify_threshold": "ERR", "reminder_interval_s": 1800}, format="json")
    assert patched.status_code == 200, patched.data
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.notify_policy() == NotifyPolicy(min_status=Status.ERR, reminder_interval_ms=1_800_000)
    assert endpoint.secret == created.data["secret"]
    entry = AuditEntry.objects.get(target=f"webhook-endpoint:{endpoint.pk}")
    assert (entry.before["reminder_interval_s"], entry.after["reminder_interval_s"]) == (None, 1800)
    assert (entry.before["notify_threshold"], entry.after["notify_threshold"]) == ("WARN", "ERR")


def test_a_viewer_reads_but_may_not_change_alerts():
    WebhookEndpoint.objects.create(name="ops", url="https://h.example/")
    viewer = client(Role.VIEWER)
    assert viewer.get("/api/alerts/endpoints/").status_code == 200
    assert viewer.post("/api/alerts/thresholds/", {"max_lag": 5}, format="json").status_code == 403
    assert AuditEntry.objects.get().result == "refused"


def test_send_test_and_retry_go_through_the_outbox(woken, django_capture_on_commit_callbacks):
    endpoint = WebhookEndpoint.objects.create(name="ops", url="https://h.example/", preset="slack")
    operator = client(Role.OPERATOR)
    with django_capture_on_commit_callbacks(execute=True):
        sent = operator.post(f"/api/alerts/endpoints/{endpoint.id}/test/")
    assert sent.status_code == 202 and sent.data["event"] == "test" and "strom-test" in sent.data["body"]
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(state=Delivery.State.FAILED, next_attempt_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        retried = operator.post(f"/api/alerts/deliveries/{delivery.id}/retry/")
    assert retried.status_code == 202 and retried.data["state"] == "pending"
    assert woken == [[delivery.id], [delivery.id]]
    assert list(AuditEntry.objects.order_by("at").values_list("target", "result")) == [
        (f"webhook-endpoint:{endpoint.id}", "ok"), (f"webhook-delivery:{delivery.id}", "ok")]


def test_thresholds_and_silences():
    operator = client(Role.OPERATOR)
    assert operator.post("/api/alerts/thresholds/", {"group": "orders-*"}, format="json").status_code == 400
    made = operator.post("/api/alerts/thresholds/", {"group": "orders-*", "max_lag_seconds": 30}, format="json")
    assert made.status_code == 201 and LagThreshold.objects.get().max_lag_seconds == 30
    backwards = operator.post("/api/alerts/silences/", {"group": "batch-*", "starts_at": "2030-01-02T00:00:00Z",
                                                        "ends_at": "2030-01-01T00:00:00Z"}, format="json")
    assert backwards.status_code == 400 and "ends_at" in backwards.data
    silence = operator.post("/api/alerts/silences/", {"group": "batch-*", "starts_at": "2030-01-01T00:00:00Z",
                                                      "ends_at": "2030-01-02T00:00:00Z"}, format="json")
    assert silence.status_code == 201 and silence.data["created_by"] == "u-operator"
    assert operator.delete(f"/api/alerts/silences/{silence.data['id']}/").status_code == 204
