"""Topic admin requests past `kafkaspec.topic_config.MAX_PARTITIONS` are refused before anything is allocated
(a fuzzed CreateTopics of 2**31-1 partitions must not exhaust the control plane)."""

import pytest
from django.conf import settings
from django.test import Client

from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import Topic
from controlplane.topics.services import create_partitions, create_topic
from kafkaspec.topic_config import MAX_PARTITIONS
from tests.controlplane.brokerapi.test_views import register


@pytest.fixture
def brokers(db):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}")
    for broker_id in (1, 2, 3):
        register(client, broker_id)


@pytest.mark.parametrize("create", [
    lambda: create_topic("huge", MAX_PARTITIONS + 1, 1),
    lambda: create_topic("huge", 2**31 - 1, 3),
    lambda: create_topic("huge", assignments=[[1]] * (MAX_PARTITIONS + 1)),
])
def test_creating_more_than_max_partitions_is_invalid_partitions(brokers, create):
    with pytest.raises(KafkaApiError) as refused:
        create()
    assert refused.value.error == "INVALID_PARTITIONS"
    assert not Topic.objects.filter(name="huge").exists()


def test_growing_past_max_partitions_is_invalid_partitions(brokers):
    create_topic("grows", 1, 1)
    with pytest.raises(KafkaApiError) as refused:
        create_partitions("grows", 2**31 - 1)
    assert refused.value.error == "INVALID_PARTITIONS"
    assert Topic.objects.get(name="grows").partitions.count() == 1
