"""The console's topic pages: list (sort, filter, pages), create, detail, and each change through
`topics.services`, audited with the console as source."""

import pytest
from django.test import Client

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.topics.models import Partition, Topic
from tests.conftest import user_with_role


@pytest.fixture
def admin(db):
    client = Client()
    client.force_login(user_with_role("alice", Role.ADMIN))
    return client


def names(response) -> list[str]:
    return [t.name for t in response.context["topics"]]


def test_list_sorts_filters_and_pages(admin, cluster):
    for i in range(101):
        Topic.objects.create(name=f"load-{i:03}")
    assert names(admin.get("/topics/?q=pay")) == ["payments"]
    assert names(admin.get("/topics/?sort=-partition_count"))[0] == "orders"
    assert names(admin.get("/topics/?sort=-under_replicated"))[0] == "orders"
    first, second = admin.get("/topics/"), admin.get("/topics/?page=2")
    assert len(names(first)) == 100 and names(second)[-1] == "payments"
    assert b'href="/topics/orders/"' in second.content or b'href="/topics/orders/"' in first.content
    assert names(admin.get("/topics/?sort=colour"))[0] == "load-000"  # an unknown column sorts by name


def test_detail_shows_partitions_and_configs_with_source(admin, cluster):
    response = admin.get("/topics/orders/")
    assert [p.partition for p in response.context["partitions"]] == [0, 1, 2]
    content = response.content.decode()
    assert "under-replicated" in content and '<td>2, 3, 1</td>' in content
    sources = {c.name: c.source for c in response.context["configs"]}
    assert (sources["retention.ms"], sources["cleanup.policy"]) == ("topic", "default")
    assert admin.get("/topics/nope/").status_code == 404


def test_create_then_edit_grow_and_delete(admin, cluster):
    response = admin.post("/topics/create/", {"name": "events", "partitions": "2", "replication_factor": "1",
                                              "config.retention.ms": "60000", "config.cleanup.policy": ""})
    assert response.status_code == 302 and response["Location"] == "/topics/events/"
    assert Topic.objects.get(name="events").configs == {"retention.ms": "60000"}

    admin.post("/topics/events/configs/", {"config": "segment.ms", "value": "0"})  # Kafka: at least 1
    assert Topic.objects.get(name="events").configs == {"retention.ms": "60000"}
    admin.post("/topics/events/configs/", {"config": "segment.ms", "value": "600000"})
    admin.post("/topics/events/configs/", {"config": "retention.ms", "reset": "1"})
    assert Topic.objects.get(name="events").configs == {"segment.ms": "600000"}

    admin.post("/topics/events/partitions/", {"count": "3"})
    assert Partition.objects.filter(topic__name="events").count() == 3

    admin.post("/topics/events/delete/", {"confirm_name": "event"})  # mistyped: nothing happens
    assert Topic.objects.filter(name="events").exists()
    assert admin.post("/topics/events/delete/", {"confirm_name": "events"})["Location"] == "/topics/"
    assert not Topic.objects.filter(name="events").exists()
    assert list(AuditEntry.objects.order_by("id").values_list("action", "source", "result")) == [
        ("create_topics", "console", "ok"), ("alter_configs", "console", "failed"),
        ("alter_configs", "console", "ok"), ("alter_configs", "console", "ok"),
        ("create_partitions", "console", "ok"), ("delete_topics", "console", "ok")]


def test_create_refusal_keeps_the_form(admin, cluster):
    response = admin.post("/topics/create/", {"name": "orders", "config.retention.ms": "5"})
    assert response.status_code == 409
    assert "TOPIC_ALREADY_EXISTS" in response.content.decode()
    assert 'value="5"' in response.content.decode()


def test_preferred_election_returns_to_the_topic(admin, cluster):
    Partition.objects.filter(topic__name="orders", partition=0).update(leader=2)
    response = admin.post("/brokers/elect-leaders/", {"election_type": "preferred", "topic": "orders",
                                                      "next": "/topics/orders/"})
    assert response["Location"] == "/topics/orders/"
    assert Partition.objects.get(topic__name="orders", partition=0).leader == 1
    assert admin.post("/brokers/elect-leaders/", {"election_type": "preferred",
                                                  "next": "https://evil.example/"})["Location"] == "/brokers/"
