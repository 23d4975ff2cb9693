"""AlterPartition batched (`services.alter_partitions`, `POST /internal/v1/partitions/alter` with `partitions`):
many partitions in one transaction and one metadata version, each refused or accepted on its own with its Kafka
error, the whole request refused only for a stale registration."""

import json

import pytest
from django.test import Client

from controlplane.cluster import metadata, services
from controlplane.core.errors import KafkaApiError
from controlplane.topics import services as topics
from controlplane.topics.models import Partition


@pytest.fixture
def cluster(db):
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", "", [])["registration_epoch"]
              for b in (1, 2, 3)}
    topics.create_topic("t", 6, 3)
    return epochs


def shrink(p: Partition, **overrides) -> services.IsrChange:
    """The leader drops its last follower, at the partition's epochs unless overridden."""
    isr = tuple([b for b in p.isr if b != p.leader][:-1] + [p.leader])
    fields = {"leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch, "isr": isr, **overrides}
    return services.IsrChange("t", p.partition, **fields)


def led_by(broker_id: int) -> list[Partition]:
    return list(Partition.objects.filter(topic__name="t", leader=broker_id).order_by("partition"))


def test_many_partitions_change_in_one_metadata_version(cluster):
    led = led_by(1)
    assert len(led) >= 2
    version = metadata.current_version()
    results = services.alter_partitions(1, cluster[1], [shrink(p) for p in led])
    assert metadata.current_version() == version + 1
    for p, result in zip(led, results, strict=True):
        p.refresh_from_db()
        assert result["error"] is None and result["isr"] == p.isr and len(p.isr) == 2
        assert (result["partition"], result["partition_epoch"]) == (p.partition, p.partition_epoch)


def test_a_refused_partition_does_not_fail_the_others(cluster):
    first, second = led_by(1)[:2]
    stale = shrink(first, partition_epoch=first.partition_epoch - 1)
    not_led = shrink(led_by(2)[0])
    results = services.alter_partitions(1, cluster[1], [
        stale, shrink(second), not_led, services.IsrChange("t", 99, 0, 0, (1,)),
        shrink(first, leader_epoch=first.leader_epoch + 1)])
    assert [r["error"] for r in results] == ["INVALID_UPDATE_VERSION", None, "INVALID_REQUEST",
                                             "UNKNOWN_TOPIC_OR_PARTITION", "FENCED_LEADER_EPOCH"]
    assert all(r["message"] for r in results if r["error"])
    first.refresh_from_db()
    second.refresh_from_db()
    assert len(first.isr) == 3 and len(second.isr) == 2


def test_nothing_changes_without_a_version_when_every_partition_is_refused(cluster):
    version = metadata.current_version()
    p = led_by(1)[0]
    [result] = services.alter_partitions(1, cluster[1], [shrink(p, isr=(2, 3))])  # without the leader
    assert result["error"] == "INVALID_REQUEST" and metadata.current_version() == version


def test_a_stale_registration_refuses_the_whole_request(cluster):
    with pytest.raises(KafkaApiError) as refused:
        services.alter_partitions(1, cluster[1] - 1, [shrink(p) for p in led_by(1)])
    assert refused.value.error == "STALE_BROKER_EPOCH"
    assert all(len(p.isr) == 3 for p in led_by(1))


def test_the_internal_api_answers_per_partition(cluster, settings):
    first, second = led_by(1)[:2]
    entries = [{"topic": c.topic, "partition": c.partition, "leader_epoch": c.leader_epoch,
                "partition_epoch": c.partition_epoch, "isr": list(c.isr)}
               for c in (shrink(first), shrink(second, partition_epoch=0 if second.partition_epoch else 5))]
    response = Client().post("/internal/v1/partitions/alter", json.dumps(
        {"broker_id": 1, "registration_epoch": cluster[1], "partitions": entries}),
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}")
    assert response.status_code == 200
    results = response.json()["partitions"]
    assert [(r["partition"], r["error"]) for r in results] == [(first.partition, None),
                                                                (second.partition, "INVALID_UPDATE_VERSION")]
    assert len(results[0]["isr"]) == 2
