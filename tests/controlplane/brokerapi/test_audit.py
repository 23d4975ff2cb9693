"""Kafka Admin API calls forwarded by a broker are recorded in the audit log with the Kafka client as actor:
each change, each failed attempt, never a validate-only request; the broker itself when it names no client."""

import pytest
from django.conf import settings
from django.test import Client

from controlplane.audit.models import AuditEntry
from tests.controlplane.brokerapi.test_views import call, register

CLIENT_HEADERS = {"HTTP_X_STROM_BROKER_ID": "2", "HTTP_X_STROM_CLIENT_HOST": "10.1.2.3",
                  "HTTP_X_STROM_CLIENT_ID": "billing%20admin%20%C3%A9"}


@pytest.fixture
def kafka_client(db):
    """The internal API as a broker forwarding a Kafka client's request calls it."""
    client = Client(HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}", **CLIENT_HEADERS)
    for broker_id in (1, 2, 3):
        register(client, broker_id)
    return client


def entries() -> list[tuple]:
    return [(e.actor, e.address, e.client_id, e.source, e.action, e.target, e.result)
            for e in AuditEntry.objects.order_by("id")]


def test_every_admin_change_is_recorded_with_the_kafka_client(kafka_client):
    assert call(kafka_client, "POST", "/topics", {"name": "orders", "num_partitions": 2, "replication_factor": 2,
                                                  "configs": {"retention.ms": "1000"}})[0] == 200
    assert call(kafka_client, "POST", "/topics/orders/partitions", {"count": 3})[0] == 200
    assert call(kafka_client, "POST", "/topics/orders/configs", {"set": {"retention.ms": "2000"}, "replace": True})[0] \
        == 200
    assert call(kafka_client, "POST", "/elect-leaders", {"election_type": "preferred", "partitions": [
        {"topic": "orders", "partition": 0}]})[0] == 200
    assert call(kafka_client, "DELETE", "/topics/orders")[0] == 204

    actor = ("billing admin é@10.1.2.3", "10.1.2.3", "billing admin é", "kafka")
    assert entries() == [(*actor, "create_topics", "topic:orders", "ok"),
                         (*actor, "create_partitions", "topic:orders", "ok"),
                         (*actor, "alter_configs", "topic:orders", "ok"),
                         (*actor, "elect_preferred_leaders", "partitions:orders-0", "ok"),
                         (*actor, "delete_topics", "topic:orders", "ok")]
    created, grown, altered, elected, deleted = AuditEntry.objects.order_by("id")
    assert created.before is None and created.after["partitions"] == 2 and created.after["replication_factor"] == 2
    assert (grown.before["partitions"], grown.after["partitions"]) == (2, 3)
    assert (altered.before["configs"], altered.after["configs"]) == ({"retention.ms": "1000"},
                                                                     {"retention.ms": "2000"})
    assert elected.after["errors"] == {"orders-0": "ELECTION_NOT_NEEDED"}
    assert deleted.before["partitions"] == 3 and deleted.after is None
    assert created.detail == "Kafka Admin API via broker 2"


def test_failed_attempts_are_recorded_and_validate_only_requests_are_not(kafka_client):
    assert call(kafka_client, "POST", "/topics", {"name": "t", "num_partitions": 1, "replication_factor": 1,
                                                  "validate_only": True})[0] == 200
    assert call(kafka_client, "POST", "/topics", {"name": "t", "num_partitions": 1, "replication_factor": 9})[0] == 400
    assert call(kafka_client, "DELETE", "/topics/nope")[0] == 404
    assert [(e.action, e.target, e.result, e.detail.split(":")[0]) for e in AuditEntry.objects.order_by("id")] == [
        ("create_topics", "topic:t", "failed", "INVALID_REPLICATION_FACTOR"),
        ("delete_topics", "topic:nope", "failed", "UNKNOWN_TOPIC_OR_PARTITION")]


def test_a_broker_acting_on_its_own_is_the_actor(db):
    broker = Client(HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}", HTTP_X_STROM_BROKER_ID="3")
    register(broker, 3)
    assert call(broker, "POST", "/topics", {"name": "__consumer_offsets", "num_partitions": 1,
                                            "replication_factor": 1})[0] == 200
    assert entries() == [("broker 3", "", "broker 3", "kafka", "create_topics", "topic:__consumer_offsets", "ok")]
