"""/api/topics/: the list's columns from the metadata store and metrics rollups, detail, and the admin's changes
(create, configs, partitions, delete) with Kafka's error names; each change audited."""

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.metrics.ingest import refresh_topic_totals
from controlplane.metrics.models import PartitionReplicaSize, TopicMetricPoint, TopicReplicaSize, TopicTotals
from controlplane.topics.listing import RATE_BUCKET_S, topic_summaries
from controlplane.topics.models import Partition, Topic
from tests.conftest import user_with_role


@pytest.fixture
def admin_client(db):
    client = APIClient()
    client.force_authenticate(user_with_role("alice", Role.ADMIN))
    return client


@pytest.fixture
def sampled(cluster):
    """Metrics for 'orders': 1000 + 500 bytes on brokers 1 and 2; partition 0 led by 1 holds [0, 10), partition 1
    led by 2 [5, 25), each replica 100 × its broker id bytes; nothing for partition 2; 600 messages in the last
    complete minute."""
    now = timezone.now()
    for broker, size in ((1, 1000), (2, 500)):
        TopicReplicaSize.objects.create(broker_id=broker, topic="orders", size_bytes=size, partitions=3,
                                        sampled_at=now)
    for partition, leader, start, end in ((0, 1, 0, 10), (1, 2, 5, 25)):
        for broker in (1, 2):  # a follower's (smaller) offsets count for nothing
            PartitionReplicaSize.objects.create(
                broker_id=broker, topic="orders", partition=partition, log_dir="/d", size_bytes=100 * broker,
                leader=broker == leader, log_start_offset=start, log_end_offset=end if broker == leader else end - 1,
                sampled_at=now)
    refresh_topic_totals(["orders"])  # as ingest does after writing replica sizes
    minute = datetime.datetime.fromtimestamp((now.timestamp() // RATE_BUCKET_S - 1) * RATE_BUCKET_S, tz=datetime.UTC)
    TopicMetricPoint.objects.create(resolution=RATE_BUCKET_S, start=minute, topic="orders", messages_in=600)
    return now


def test_list_columns_come_from_metadata_and_rollups(api_client, sampled):
    rows = {t["name"]: t for t in api_client.get("/api/topics/").json()["results"]}
    orders, payments = rows["orders"], rows["payments"]
    assert {k: orders[k] for k in ("partition_count", "replication_factor", "under_replicated", "offline",
                                   "size_bytes", "messages", "produce_rate")} == {
        "partition_count": 3, "replication_factor": 3, "under_replicated": 1, "offline": 0, "size_bytes": 1500,
        "messages": 30, "produce_rate": 10.0}
    assert (payments["size_bytes"], payments["messages"], payments["produce_rate"]) == (None, None, 0.0)


@pytest.mark.parametrize("ordering, expected", [
    ("size_bytes", ["orders", "payments"]),  # not reported yet (null): last either way
    ("-size_bytes", ["orders", "payments"]),
    ("-messages", ["orders", "payments"]),
    ("-name", ["payments", "orders"]),
    ("-partition_count", ["orders", "payments"]),
    ("under_replicated", ["payments", "orders"]),
])
def test_list_sorts_by_every_column(api_client, sampled, ordering, expected):
    Topic.objects.create(name="zeta")  # no partitions: every count 0
    names = [t["name"] for t in api_client.get(f"/api/topics/?ordering={ordering}").json()["results"]]
    assert [n for n in names if n != "zeta"] == expected
    assert api_client.get("/api/topics/?ordering=colour").json()["error"] == "INVALID_REQUEST"


def test_pages_sorted_by_size_follow_one_another_as_one_sorted_query(api_client, cluster):
    for i in range(25):
        Topic.objects.create(name=f"s{i:02}")
        if i % 3:  # the others not reported yet: last
            TopicTotals.objects.create(topic=f"s{i:02}", size_bytes=i * 7 % 10, updated_at=timezone.now())
    expected = [t.name for t in topic_summaries(ordering="-size_bytes")]  # one query, every column
    pages = [api_client.get(f"/api/topics/?ordering=-size_bytes&limit=10&offset={o}").json()["results"]
             for o in (0, 10, 20)]
    assert [t["name"] for page in pages for t in page] == expected
    assert [(t["name"], t["size_bytes"]) for t in pages[0][:3]] == [("s07", 9), ("s17", 9), ("s04", 8)]


def test_list_takes_a_constant_number_of_queries(api_client, cluster):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert api_client.get("/api/topics/?ordering=-size_bytes").status_code == 200
        return len(captured)

    queries()  # the first request also loads the user's permissions
    few = queries()
    for i in range(30):
        topic = Topic.objects.create(name=f"t{i}")
        Partition.objects.create(topic=topic, partition=0, replicas=[1, 2], isr=[1], leader=1)
    assert queries() == few


def test_detail_has_partitions_and_configs_with_source(api_client, sampled):
    body = api_client.get("/api/topics/orders/").json()
    assert [(p["partition"], p["leader"], p["replicas"], p["under_replicated"], p["log_start_offset"],
             p["log_end_offset"], p["replica_sizes"]) for p in body["partitions"]] == [
        (0, 1, [1, 2, 3], False, 0, 10, [100, 200, None]), (1, 2, [2, 3, 1], True, 5, 25, [200, None, 100]),
        (2, 3, [3, 1, 2], False, None, None, [None, None, None])]
    configs = {c["name"]: c for c in body["config_entries"]}
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["source"]) == ("3600000", "topic")
    assert configs["cleanup.policy"] == {**configs["cleanup.policy"], "value": "delete", "source": "default",
                                         "type": "list", "default": "delete"}
    assert configs["cleanup.policy"]["doc"]
    assert api_client.get("/api/topics/nope/").json()["error"] == "UNKNOWN_TOPIC_OR_PARTITION"


def test_create_alter_grow_delete(admin_client, cluster):
    created = admin_client.post("/api/topics/", {"name": "events", "partitions": 2, "replication_factor": 2,
                                                 "configs": {"retention.ms": "60000"}}, format="json")
    assert created.status_code == 201, created.json()
    assert (created.json()["partition_count"], created.json()["replication_factor"]) == (2, 2)

    patched = admin_client.patch("/api/topics/events/", {"configs": {"cleanup.policy": "compact",
                                                                     "retention.ms": None}}, format="json")
    assert patched.status_code == 200
    assert Topic.objects.get(name="events").configs == {"cleanup.policy": "compact"}

    grown = admin_client.post("/api/topics/events/partitions/", {"count": 4}, format="json")
    assert (grown.status_code, grown.json()["partition_count"]) == (200, 4)

    assert admin_client.delete("/api/topics/events/").status_code == 204
    assert not Topic.objects.filter(name="events").exists()
    assert list(AuditEntry.objects.order_by("id").values_list("action", "target", "result")) == [
        ("create_topics", "topic:events", "ok"), ("alter_configs", "topic:events", "ok"),
        ("create_partitions", "topic:events", "ok"), ("delete_topics", "topic:events", "ok")]
    assert AuditEntry.objects.get(action="alter_configs").before["configs"] == {"retention.ms": "60000"}


@pytest.mark.parametrize("method, path, body, status, error", [
    ("post", "/api/topics/", {"name": "orders"}, 409, "TOPIC_ALREADY_EXISTS"),
    ("post", "/api/topics/", {"name": "bad name!"}, 400, "INVALID_TOPIC_EXCEPTION"),
    ("post", "/api/topics/", {"name": "x", "replication_factor": 5}, 400, "INVALID_REPLICATION_FACTOR"),
    ("post", "/api/topics/", {"name": "x", "partitions": 0}, 400, "INVALID_PARTITIONS"),
    ("post", "/api/topics/", {"name": "x", "configs": {"retention.ms": "soon"}}, 400, "INVALID_CONFIG"),
    ("post", "/api/topics/", {"name": "x", "configs": {"no.such": "1"}}, 400, "INVALID_CONFIG"),
    ("post", "/api/topics/", {"partitions": 1}, 400, "INVALID_REQUEST"),
    ("patch", "/api/topics/orders/", {"configs": {"min.insync.replicas": "0"}}, 400, "INVALID_CONFIG"),
    ("patch", "/api/topics/nope/", {"configs": {}}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ("post", "/api/topics/orders/partitions/", {"count": 2}, 400, "INVALID_PARTITIONS"),
    ("delete", "/api/topics/nope/", None, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_refusals_carry_kafka_error_names_and_change_nothing(admin_client, cluster, method, path, body, status,
                                                             error):
    before = list(Topic.objects.values_list("name", "configs")), Partition.objects.count()
    response = getattr(admin_client, method)(path, body, format="json")
    assert (response.status_code, response.json()["error"]) == (status, error), response.json()
    assert response.json()["message"]
    assert (list(Topic.objects.values_list("name", "configs")), Partition.objects.count()) == before


def test_validate_only_creates_nothing(admin_client, cluster):
    response = admin_client.post("/api/topics/", {"name": "dry", "partitions": 2, "validate_only": True},
                                 format="json")
    assert (response.status_code, len(response.json()["partitions"])) == (200, 2)
    assert not Topic.objects.filter(name="dry").exists()
    assert not AuditEntry.objects.exists()
