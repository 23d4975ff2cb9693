"""AlterPartition batched (`services.alter_partitions`, `POST /internal/v1/partitions/alter` with `partitions`):
many partitions in one transaction and one metadata version, each refused or accepted on its own with its Kafka
error, the whole request refused only for a stale registration; a partition that changes between the validation
and the write transaction is refused as a stale proposal (compare-and-set on its epochs)."""

import json

import pytest
from django.db import transaction
from django.test import Client

from controlplane.cluster import metadata, services
from controlplane.cluster.models import Broker, BrokerState
from controlplane.controller import election
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


def move_leader(p: Partition) -> None:
    """Another writer moves the leadership of `p` to its next in-sync replica (leader epoch + 1)."""
    with transaction.atomic():
        state = metadata.locked_state()
        fresh = Partition.objects.get(pk=p.pk)
        election.apply_change(fresh, election.PartitionState(next(b for b in fresh.isr if b != fresh.leader),
                                                             tuple(fresh.isr)))
        metadata.bump(state)


def alter_again(p: Partition) -> None:
    """The same leader's other AlterPartition for `p` commits first (partition epoch + 1)."""
    [result] = services.alter_partitions(1, Broker.objects.get(broker_id=1).registration_epoch, [
        services.IsrChange(p.topic.name, p.partition, p.leader_epoch, p.partition_epoch, (p.leader,))])
    assert result["error"] is None


def fence_follower(p: Partition) -> None:
    """The follower that `p`'s proposal brings back into the ISR is fenced (no epoch of `p` moves)."""
    with transaction.atomic():
        state = metadata.locked_state()
        Broker.objects.filter(broker_id=p.replicas[-1]).update(state=BrokerState.FENCED)
        election.on_broker_gone(p.replicas[-1], election.live_broker_ids())
        metadata.bump(state)


def delete_topic(p: Partition) -> None:
    topics.delete_topic(p.topic.name)


@pytest.mark.parametrize(("meanwhile", "error"), [
    (None, None),
    (move_leader, "FENCED_LEADER_EPOCH"),
    (alter_again, "INVALID_UPDATE_VERSION"),
    (fence_follower, "INELIGIBLE_REPLICA"),
    (delete_topic, "UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_a_partition_changed_after_validation_is_refused_as_stale(cluster, monkeypatch, meanwhile, error):
    """Validation reads outside the write transaction: what commits between it and the write (here, injected
    right after `_validated`) refuses that partition's proposal, and only that one; the batch is still one
    metadata version on top of what committed meanwhile, and the refused row keeps what the other writer left."""
    topics.create_topic("victim", assignments=[[1, 2, 3]])
    topics.create_topic("bystander", assignments=[[1, 2]])  # not on broker 3, which one row fences
    victim, bystander = (Partition.objects.get(topic__name=name) for name in ("victim", "bystander"))
    [shrunk] = services.alter_partitions(1, cluster[1], [
        services.IsrChange("victim", 0, victim.leader_epoch, victim.partition_epoch, (1, 2))])
    victim.refresh_from_db()
    assert shrunk["error"] is None and victim.isr == [1, 2]
    expand = services.IsrChange("victim", 0, victim.leader_epoch, victim.partition_epoch, (1, 2, 3))
    validated = services._validated
    interleaved = []  # the version once the other writer committed

    def validated_then_meanwhile(*args):
        checked = validated(*args)
        if not interleaved:  # the request under test (`alter_again` makes another one)
            interleaved.append(None)
            if meanwhile is not None:
                meanwhile(Partition.objects.get(pk=victim.pk))
            interleaved[0] = metadata.current_version()
        return checked

    monkeypatch.setattr(services, "_validated", validated_then_meanwhile)
    results = services.alter_partitions(1, cluster[1], [
        expand, services.IsrChange("bystander", 0, bystander.leader_epoch, bystander.partition_epoch, (1,))])
    assert [r["error"] for r in results] == [error, None]
    assert metadata.current_version() == interleaved[0] + 1
    bystander.refresh_from_db()
    assert bystander.isr == [1] and results[1]["partition_epoch"] == bystander.partition_epoch
    after = Partition.objects.filter(pk=victim.pk).first()
    if error is None:
        assert after.isr == [1, 2, 3] and results[0]["isr"] == [1, 2, 3]
        assert results[0]["partition_epoch"] == after.partition_epoch == victim.partition_epoch + 1
    else:
        assert results[0]["message"]
        assert after is None or after.isr != [1, 2, 3]
