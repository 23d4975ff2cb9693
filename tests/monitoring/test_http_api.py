"""The monitor's HTTP API (monitoring.http_api) over real HTTP: a `LagMonitor` fed commits and heads
directly (no broker; its storage and evaluator are the real ones) behind a `MonitorHttpServer`, requested
with urllib: Burrow's routes, envelopes and status codes, the bearer secret, Strom's JSON, and /metrics
(parsed with Prometheus' own parser, cached per round, gzip on request)."""

import gzip
import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitoring.config import MonitorConfig, Threshold
from monitoring.http_api import MonitorHttpServer
from monitoring.service import LagMonitor

SECRET = "s3cret"
NOW_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def monitor():
    """Group 'billing' committed 5 times to orders-0 and keeps up (OK; orders-1 has no commit of it); group
    'slow' falls further behind on orders-1 (WARN) and breaches a 100-record threshold."""
    clock = [NOW_MS]
    config = MonitorConfig(bootstrap_servers="127.0.0.1:1", cluster="prod", intervals=5, lag_seconds=False,
                           samples_topic=None)
    lag_monitor = LagMonitor(config, clock_ms=lambda: clock[0],
                             thresholds=lambda: (Threshold(group="slow", max_lag=100),))
    storage = lag_monitor.storage
    for step in range(5):
        at = NOW_MS - 50_000 + step * 10_000
        storage.add_heads("orders", [100 + 10 * step, 1000 + 200 * step])
        storage.add_commit("billing", "orders", 0, 100 + 10 * step, step * 2, at, at)
        storage.add_commit("slow", "orders", 1, 10 + step, step * 2 + 1, at, at)
    storage.set_owners("billing", {("orders", 0): ("/10.0.0.7", "billing-app")}, NOW_MS)
    lag_monitor.evaluate(NOW_MS)
    return lag_monitor


@pytest.fixture(scope="module")
def server(monitor):
    running = MonitorHttpServer(monitor, secret=SECRET)
    running.start()
    yield running
    running.stop()


def request(server, path: str, method: str = "GET", secret: str | None = SECRET,
            headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", method=method,
                                 headers={**({"Authorization": f"Bearer {secret}"} if secret else {}),
                                          **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def body(server, path: str, method: str = "GET") -> tuple[int, dict]:
    status, headers, raw = request(server, path, method)
    assert headers["Content-Type"] == "application/json"
    return status, json.loads(raw)


def test_the_secret_is_required(server):
    assert request(server, "/v3/kafka", secret=None)[0] == 401
    assert request(server, "/v3/kafka", secret="wrong")[0] == 401
    assert request(server, "/v3/kafka")[0] == 200


def test_burrow_cluster_topic_and_consumer_routes(server):
    host = body(server, "/v3/kafka")[1]["request"]["host"]
    assert body(server, "/v3/kafka") == (200, {"error": False, "message": "cluster list returned",
                                               "clusters": ["prod"], "request": {"url": "/v3/kafka", "host": host}})
    assert body(server, "/v3/kafka/prod")[1]["module"]["servers"] == ["127.0.0.1:1"]
    assert body(server, "/v3/kafka/nope") == (404, {"error": True, "message": "cluster module not found",
                                                    "request": {"url": "/v3/kafka/nope", "host": host}})
    assert body(server, "/v3/kafka/prod/topic")[1]["topics"] == ["orders"]
    assert body(server, "/v3/kafka/prod/topic/orders")[1]["offsets"] == [140, 1800]
    assert body(server, "/v3/kafka/prod/topic/orders/consumers")[1]["consumers"] == ["billing", "slow"]
    assert body(server, "/v3/kafka/nope/consumer")[0] == 404
    assert body(server, "/v3/kafka/prod/consumer")[1]["consumers"] == ["billing", "slow"]
    status, detail = body(server, "/v3/kafka/prod/consumer/billing")
    partition = detail["topics"]["orders"][0]
    assert (status, partition["owner"], partition["client_id"], partition["current-lag"]) == (
        200, "/10.0.0.7", "billing-app", 0)
    assert [c["offset"] for c in partition["offsets"]] == [100, 110, 120, 130, 140]


def test_burrow_status_lag_and_not_found(server):
    status, ok = body(server, "/v3/kafka/prod/consumer/billing/status")
    assert (status, ok["status"]["status"], ok["status"]["partitions"], ok["status"]["partition_count"]) == (
        200, "OK", [], 2)
    status, lag = body(server, "/v3/kafka/prod/consumer/billing/lag")
    assert [p["status"] for p in lag["status"]["partitions"]] == ["OK", "OK"]
    status, missing = body(server, "/v3/kafka/prod/consumer/nobody/status")
    assert (status, missing["error"], missing["status"]["status"]) == (404, False, "NOTFOUND")
    assert body(server, "/v3/kafka/other/consumer/billing/lag")[0] == 404


def test_burrow_config_routes(server):
    assert body(server, "/v3/config/storage")[1]["modules"] == ["default"]
    assert body(server, "/v3/config/storage/default")[1]["module"]["intervals"] == 5
    assert body(server, "/v3/config/evaluator/default")[1]["module"]["class-name"] == "caching"
    assert body(server, "/v3/config/cluster/prod")[1]["module"]["class-name"] == "kafka"
    assert body(server, "/v3/config/consumer/prod")[1]["module"]["offsets-topic"] == "__consumer_offsets"
    assert body(server, "/v3/config/notifier")[1]["modules"] == []
    assert body(server, "/v3/config/storage/other")[1]["message"] == "storage module not found"
    assert set(body(server, "/v3/config")[1]) >= {"general", "logging", "zookeeper", "httpserver"}
    assert body(server, "/v3/admin/loglevel")[1]["message"] == "log level returned"


def test_unknown_routes_and_methods(server):
    status, headers, raw = request(server, "/v3/no/such/uri")
    assert (status, headers["Content-Type"]) == (404, "text/plain; charset=utf-8")
    assert json.loads(raw) == {"error": True, "message": "invalid request type", "result": {}}
    assert request(server, "/v3/kafka/prod/consumer", method="POST")[0] == 405
    assert request(server, "/burrow/admin")[2] == b"GOOD"
    assert request(server, "/burrow/admin/ready")[:3:2] == (200, b"READY")


def test_strom_groups_and_status(server):
    status, listing = body(server, "/strom/v1/groups")
    assert status == 200 and [g["group"] for g in listing["groups"]] == ["billing", "slow"]
    slow = listing["groups"][1]
    assert (slow["status"], slow["alert_status"], slow["threshold_breached"], slow["totallag"]) == (
        "WARN", "ERR", True, 1800 - 14)
    status, detail = body(server, "/strom/v1/groups/billing")
    committed, uncommitted = detail["partitions"]
    assert (committed["topic"], committed["committed_offset"], committed["end_offset"], committed["lag"]) == (
        "orders", 140, 140, 0)
    assert [c["offset"] for c in committed["window"]] == [100, 110, 120, 130, 140]
    assert (uncommitted["partition"], uncommitted["committed_offset"], uncommitted["lag"], uncommitted["window"]) == (
        1, None, None, [])
    assert body(server, "/strom/v1/groups/nobody")[0] == 404
    status, health = body(server, "/strom/v1/status")
    assert (health["ready"], health["groups"], health["partitions"]) == (True, 2, 4)


def test_strom_topic_groups_give_each_groups_lag_on_that_topic_only(server):
    status, listing = body(server, "/strom/v1/topics/orders/groups")
    assert status == 200 and listing["topic"] == "orders"
    billing, slow = listing["groups"]
    # billing: orders-0 caught up, no commit on orders-1 (no lag counted there)
    assert (billing["group"], billing["lag"], billing["committed_partitions"], billing["topic_status"]) == (
        "billing", 0, 1, "OK")
    assert (slow["group"], slow["lag"], slow["committed_partitions"], slow["topic_status"]) == (
        "slow", 1800 - 14, 1, "WARN")
    assert (slow["alert_status"], slow["threshold_breached"]) == ("ERR", True)
    assert body(server, "/strom/v1/topics/payments/groups") == (200, {**listing, "topic": "payments", "groups": []})


def scrape(raw: bytes) -> dict[str, list]:
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(raw.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def test_metrics_families_and_gzip(server):
    status, headers, raw = request(server, "/metrics")
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = scrape(raw)
    assert samples["burrow_kafka_consumer_lag_total"] == [({"cluster": "prod", "consumer_group": "billing"}, 0.0),
                                                          ({"cluster": "prod", "consumer_group": "slow"}, 1786.0)]
    assert "kafka_consumergroup_lag" in samples and "process_resident_memory_bytes" in samples
    only = scrape(request(server, "/metrics?family=kafka_exporter")[2])
    assert "kafka_consumergroup_lag" in only and "burrow_kafka_consumer_status" not in only
    assert request(server, "/metrics?family=nope")[0] == 400
    status, headers, compressed = request(server, "/metrics", headers={"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip"
    assert scrape(gzip.decompress(compressed))["burrow_kafka_consumer_status"] == samples[
        "burrow_kafka_consumer_status"]


def test_delete_forgets_a_group_until_it_commits_again(monitor, server):
    status, removed = body(server, "/v3/kafka/prod/consumer/slow/topic/orders", method="DELETE")
    assert (status, removed["message"]) == (200, "consumer group removed")
    assert monitor.groups() == ["billing"]
    assert body(server, "/v3/kafka/prod/consumer/slow")[0] == 404
