"""The control plane's lag endpoints forward to a real monitor HTTP server (monitoring.http_api, behind the
cluster secret) after their own authentication and permission checks: Burrow's /v3 unchanged, /metrics,
/api/lag/…; API tokens under `Token` or `Bearer`; the DELETE is permitted to operators and audited."""

import gzip
import json

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from controlplane.access.actions import Role
from controlplane.access.models import ApiToken
from controlplane.audit.models import AuditEntry
from monitoring.http_api import MonitorHttpServer
from tests.conftest import user_with_role
from tests.monitoring.test_http_api import monitor  # noqa: F401 (the fixture: groups billing OK, slow WARN)
from tests.monitoring.test_http_api import request as direct

pytestmark = pytest.mark.django_db
SECRET = "cluster-s3cret"


@pytest.fixture(scope="module")
def server(monitor):  # noqa: F811
    running = MonitorHttpServer(monitor, secret=SECRET)
    running.start()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def monitor_url(server, settings):
    settings.STROM_CLUSTER_SECRET = SECRET
    settings.STROM_LAG_MONITOR_URL = f"http://127.0.0.1:{server.port}"


def token(role: Role, name: str = "tool") -> str:
    _, secret = ApiToken.objects.create(user=user_with_role(f"u-{role.name.lower()}", role), expiry=None, name=name)
    return secret


def get(path: str, auth: str | None = None, method: str = "get", **headers):
    extra = {"HTTP_AUTHORIZATION": auth} if auth else {}
    return getattr(Client(), method)(path, **extra, **headers)


def test_burrow_routes_answer_as_the_monitor_does_with_a_token(server):
    bearer = f"Bearer {token(Role.VIEWER)}"
    for path in ("/v3/kafka", "/v3/kafka/prod", "/v3/kafka/prod/consumer", "/v3/kafka/prod/consumer/billing",
                 "/v3/kafka/prod/consumer/slow/lag", "/v3/kafka/prod/topic/orders", "/v3/kafka/prod/consumer/x/status"):
        response = get(path, bearer)
        status, headers, raw = direct(server, path, secret=SECRET)
        assert (response.status_code, response["Content-Type"]) == (status, headers["Content-Type"]), path
        assert json.loads(response.content) == json.loads(raw), path
    assert json.loads(get("/v3/kafka/prod/consumer/slow/status", bearer).content)["status"]["status"] == "WARN"
    assert get("/v3/nope", bearer).status_code == 404


def test_without_a_token_nothing_is_forwarded():
    for path in ("/v3/kafka", "/metrics", "/api/lag/groups/"):
        assert get(path).status_code == 401, path
        assert get(path, "Bearer not-a-token").status_code == 401, path


def test_metrics_keep_prometheus_text_and_gzip():
    auth = f"Token {token(Role.VIEWER)}"
    plain = get("/metrics", auth)
    assert plain.status_code == 200 and plain["Content-Type"].startswith("text/plain")
    names = {f.name for f in text_string_to_metric_families(plain.content.decode())}
    assert {"burrow_kafka_consumer_status", "kafka_consumergroup_lag"} <= names
    zipped = get("/metrics", auth, HTTP_ACCEPT_ENCODING="gzip")
    assert zipped["Content-Encoding"] == "gzip" and b"burrow_kafka_consumer_status" in gzip.decompress(zipped.content)


def test_strom_lag_endpoints():
    auth = f"Token {token(Role.VIEWER)}"
    groups = json.loads(get("/api/lag/groups/", auth).content)
    assert {g["group"]: g["status"] for g in groups["groups"]} == {"billing": "OK", "slow": "WARN"}
    assert get("/api/lag/groups/slow/", auth).status_code == 200
    assert get("/api/lag/groups/nobody/", auth).status_code == 404
    assert json.loads(get("/api/lag/status/", auth).content)["ready"] is True


def test_burrow_delete_needs_the_operator_role_and_is_audited(monitor):  # noqa: F811
    viewer = get("/v3/kafka/prod/consumer/slow", f"Bearer {token(Role.VIEWER)}", method="delete")
    assert viewer.status_code == 403 and "slow" in monitor.groups()
    operator = get("/v3/kafka/prod/consumer/slow", f"Bearer {token(Role.OPERATOR)}", method="delete")
    assert operator.status_code == 200 and "slow" not in monitor.groups()
    assert list(AuditEntry.objects.order_by("at").values_list("actor", "action", "result")) == [
        ("u-viewer", "manage_alerts", "refused"), ("u-operator", "manage_alerts", "ok")]


def test_a_stopped_monitor_is_a_503_with_a_reason(settings):
    settings.STROM_LAG_MONITOR_URL = "http://127.0.0.1:9"
    response = get("/api/lag/groups/", f"Token {token(Role.VIEWER)}")
    assert response.status_code == 503 and "run_lag_monitor" in json.loads(response.content)["message"]
