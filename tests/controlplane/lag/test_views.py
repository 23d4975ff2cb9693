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
from controlplane.groups import kafka_client
from controlplane.groups.kafka_client import TopicPartition
from controlplane.lag import client as lag_client
from controlplane.lag.client import forward
from controlplane.topics.models import Partition, Topic
from monitoring.http_api import MonitorHttpServer
from tests.conftest import user_with_role
from tests.controlplane.groups.conftest import FakeGroupAdmin, FakeLog
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


def test_burrow_delete_needs_the_operator_role_and_is_audited(monitor, monkeypatch):  # noqa: F811
    deleted = []
    monkeypatch.setattr(monitor, "delete_group", lambda group, topic=None: deleted.append((group, topic)))
    viewer = get("/v3/kafka/prod/consumer/slow", f"Bearer {token(Role.VIEWER)}", method="delete")
    assert viewer.status_code == 403 and deleted == []
    operator = get("/v3/kafka/prod/consumer/slow", f"Bearer {token(Role.OPERATOR)}", method="delete")
    assert operator.status_code == 200 and deleted == [("slow", None)]
    assert list(AuditEntry.objects.order_by("at").values_list("actor", "action", "result")) == [
        ("u-viewer", "manage_alerts", "refused"), ("u-operator", "manage_alerts", "ok")]


def test_a_stopped_monitor_is_a_503_with_a_reason(settings):
    settings.STROM_LAG_MONITOR_URL = "http://127.0.0.1:9"
    response = get("/api/lag/groups/", f"Token {token(Role.VIEWER)}")
    assert response.status_code == 503 and "run_lag_monitor" in json.loads(response.content)["message"]


@pytest.fixture
def groups_in_kafka(monkeypatch):
    """The groups' own state (coordinator, offsets) from a fake admin client; the verdicts from the monitor."""
    fake = FakeGroupAdmin()
    monkeypatch.setattr(kafka_client, "connect", lambda: fake)
    fake.add_topic("orders", FakeLog(0, [0] * 150), FakeLog(0, [0] * 1900))
    for group in ("billing", "slow", "quiet"):
        fake.add_group(group, committed={TopicPartition("orders", 0): 140})
    return fake


def test_the_groups_page_shows_each_groups_lag_status_coloured(groups_in_kafka):
    client = Client()
    client.force_login(user_with_role("viewer", Role.VIEWER))
    html = client.get("/groups/").content.decode()
    assert '<span class="lag-status lag-ok"' in html and ">OK</span>" in html
    assert '<span class="lag-status lag-err"' in html  # slow: Burrow WARN, raised to ERR by its threshold
    assert "lag-notfound" in html  # quiet: no commit seen by the monitor
    assert 'href="/dashboard/lag?group=slow"' in html
    detail = client.get("/groups/slow/").content.decode()
    assert 'id="lag-status">ERR</span>' in detail and "Burrow: WARN; a threshold is breached" in detail
    assert detail.count('class="lag-status lag-warn"') >= 1 and "@" in detail  # partition status and window


def test_the_groups_page_says_when_the_monitor_is_not_running(groups_in_kafka, settings):
    settings.STROM_LAG_MONITOR_URL = "http://127.0.0.1:9"
    client = Client()
    client.force_login(user_with_role("viewer", Role.VIEWER))
    page = client.get("/groups/")
    assert page.status_code == 200 and 'id="no-lag-monitor"' in page.content.decode()


def test_the_topic_page_shows_the_groups_reading_it_with_their_lag_in_one_monitor_request(monkeypatch):
    topic = Topic.objects.create(name="orders")
    for p in range(2):
        Partition.objects.create(topic=topic, partition=p, replicas=[1], isr=[1], leader=1)
    asked = []
    monkeypatch.setattr(lag_client, "forward", lambda *a, **k: asked.append(a[1]) or forward(*a, **k))
    client = Client()
    client.force_login(user_with_role("viewer", Role.VIEWER))
    page = client.get("/topics/orders/")
    assert asked == ["/strom/v1/topics/orders/groups"]
    rows = page.context["consumers"]["groups"]
    assert [(g["group"], g["lag"], g["alert_status"], g["topic_status"]) for g in rows] == [
        ("billing", 0, "OK", "OK"), ("slow", 1800 - 14, "ERR", "WARN")]
    html = page.content.decode()
    assert 'href="/groups/slow/"' in html and '<td class="lag">1786</td>' in html and "1 of 2" in html
    api = json.loads(get("/api/lag/topics/orders/groups/", f"Token {token(Role.VIEWER)}").content)
    assert api["groups"] == rows


def test_the_topic_page_says_when_the_monitor_is_not_running(settings):
    settings.STROM_LAG_MONITOR_URL = "http://127.0.0.1:9"
    Topic.objects.create(name="orders")
    client = Client()
    client.force_login(user_with_role("viewer", Role.VIEWER))
    page = client.get("/topics/orders/")
    assert page.status_code == 200 and 'id="no-lag-monitor"' in page.content.decode()
