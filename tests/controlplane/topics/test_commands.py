"""`manage.py topics` and `manage.py configs` print kafka-topics.sh's and kafka-configs.sh's lines, change the
cluster through `topics.services` as the --as user, and fail with one line and a non-zero exit."""

import base64
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from controlplane.audit.models import AuditEntry
from controlplane.topics.models import Topic


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue().splitlines()


@pytest.fixture
def world(cluster, local_superuser):
    return cluster


def test_describe_prints_kafkas_lines(world):
    topic_id = base64.urlsafe_b64encode(Topic.objects.get(name="orders").topic_id.bytes).decode().rstrip("=")
    assert len(topic_id) == 22
    assert run("topics", "--describe", "--topic", "orders") == [
        f"Topic: orders\tTopicId: {topic_id}\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: retention.ms=3600000",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,1",
        "\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2",
    ]


def test_describe_filters_partitions_like_kafka(world):
    Topic.objects.get(name="payments").partitions.update(leader=-1, isr=[])
    assert run("topics", "--describe", "--under-replicated-partitions") == [
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,1"]
    assert run("topics", "--describe", "--unavailable-partitions") == [
        "\tTopic: payments\tPartition: 0\tLeader: none\tReplicas: 1\tIsr: "]


def test_create_alter_delete_and_list(world):
    assert run("topics", "--create", "--topic", "events", "--partitions", "2", "--replication-factor", "2",
               "--config", "cleanup.policy=compact", "--config", "retention.ms=1000") == ["Created topic events."]
    assert run("topics", "--list") == ["events", "orders", "payments"]
    assert run("topics", "--alter", "--topic", "events", "--partitions", "3") == []
    assert run("topics", "--describe", "--topic", "events")[0].endswith(
        "PartitionCount: 3\tReplicationFactor: 2\tConfigs: cleanup.policy=compact,retention.ms=1000")
    assert run("topics", "--delete", "--topic", "events") == []
    assert run("topics", "--list") == ["orders", "payments"]
    assert list(AuditEntry.objects.order_by("id").values_list("action", "source", "actor", "result")) == [
        ("create_topics", "cli", "admin", "ok"), ("create_partitions", "cli", "admin", "ok"),
        ("delete_topics", "cli", "admin", "ok")]


@pytest.mark.parametrize("args, message", [
    (("topics", "--create", "--topic", "orders"), "TOPIC_ALREADY_EXISTS: Topic 'orders' already exists."),
    (("topics", "--create", "--topic", "x", "--replication-factor", "4"), "INVALID_REPLICATION_FACTOR: "),
    (("topics", "--create", "--topic", "x", "--config", "retention.ms"), "INVALID_CONFIG: "),
    (("topics", "--alter", "--topic", "orders", "--partitions", "1"), "INVALID_PARTITIONS: "),
    (("topics", "--delete", "--topic", "nope"), "UNKNOWN_TOPIC_OR_PARTITION: "),
    (("topics", "--describe", "--topic", "nope"), "UNKNOWN_TOPIC_OR_PARTITION: "),
    (("configs", "--entity-type", "topics", "--entity-name", "orders", "--alter", "--add-config",
      "min.insync.replicas=0"), "INVALID_CONFIG: "),
    (("configs", "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "x=1"),
     "Strom brokers read their settings"),
])
def test_errors_are_one_line_and_change_nothing(world, args, message):
    before = list(Topic.objects.values_list("name", "configs"))
    with pytest.raises(CommandError) as raised:
        run(*args)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)
    assert list(Topic.objects.values_list("name", "configs")) == before


def test_configs_describe_and_alter_like_kafka_configs(world):
    assert run("configs", "--entity-type", "topics", "--entity-name", "orders", "--describe") == [
        "Dynamic configs for topic orders are:",
        "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}"]
    assert run("configs", "--entity-type", "topics", "--entity-name", "orders", "--alter",
               "--add-config", "cleanup.policy=compact,segment.ms=60000", "--delete-config", "retention.ms") == [
        "Completed updating config for topic orders."]
    assert Topic.objects.get(name="orders").configs == {"cleanup.policy": "compact", "segment.ms": "60000"}
    everything = run("configs", "--entity-type", "topics", "--entity-name", "orders", "--describe", "--all")
    assert everything[0] == "All configs for topic orders are:"
    assert "  retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.ms=604800000}" in everything
    assert AuditEntry.objects.get().after["configs"] == {"cleanup.policy": "compact", "segment.ms": "60000"}
