"""Fixtures for control-plane tests: users, API clients and a small cluster in the metadata store."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from controlplane.cluster.models import Broker, BrokerState
from controlplane.topics.models import NO_LEADER, Partition, Topic

PASSWORD = "correct horse battery"


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("operator", password=PASSWORD)


@pytest.fixture
def api_client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def cluster(db):
    """3 brokers (2 running, 1 fenced); topic 'orders' with 3 partitions (one under-replicated, one
    whose leader is the fenced broker) and topic 'payments' with 1 healthy partition."""
    for broker_id, state in ((1, BrokerState.RUNNING), (2, BrokerState.RUNNING), (3, BrokerState.FENCED)):
        Broker.objects.create(broker_id=broker_id, listeners=f"PLAINTEXT://127.0.0.1:{9091 + broker_id}",
                              rack=f"rack-{broker_id % 2}", state=state)
    orders = Topic.objects.create(name="orders", configs={"retention.ms": "3600000"})
    Partition.objects.create(topic=orders, partition=0, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    Partition.objects.create(topic=orders, partition=1, replicas=[2, 3, 1], isr=[2, 1], leader=2)
    Partition.objects.create(topic=orders, partition=2, replicas=[3, 1, 2], isr=[3, 1, 2], leader=3)
    payments = Topic.objects.create(name="payments")
    Partition.objects.create(topic=payments, partition=0, replicas=[1], isr=[1], leader=1)
    return {"brokers": 3, "running": 2, "topics": 2, "partitions": 4, "offline": 1, "under_replicated": 1,
            "no_leader": NO_LEADER}
