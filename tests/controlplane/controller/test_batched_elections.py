"""Controller work proportional to the change: a broker failure, a controlled shutdown, ElectLeaders and the
leader rebalance write their elections in a few UPDATE statements (one per distinct outcome and 500
partitions), whatever the number of partitions, with the same result as one election per partition."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from controlplane.cluster import metadata, services
from controlplane.cluster.models import Broker, BrokerState
from controlplane.controller import election
from controlplane.controller.controller import Controller
from controlplane.topics import services as topics
from controlplane.topics.models import NO_LEADER, Partition

PARTITIONS = 600


def partition_updates(queries) -> int:
    return sum(1 for q in queries if q["sql"].startswith('UPDATE "topics_partition"'))


@pytest.fixture
def cluster(db):
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", None, [])["registration_epoch"]
              for b in (1, 2, 3)}
    topics.create_topic("wide", PARTITIONS, 3)
    return epochs


def snapshot(topic: str = "wide") -> dict:
    return {p.partition: (p.leader, list(p.isr), p.leader_epoch, p.partition_epoch)
            for p in Partition.objects.filter(topic__name=topic)}


def only_in_sync(topic: str, broker_id: int) -> None:
    """Every partition of `topic` led by `broker_id` with an ISR of just it (its followers fell behind)."""
    Partition.objects.filter(topic__name=topic).update(leader=broker_id, isr=[broker_id])


@pytest.mark.parametrize("by_id", [False, True], ids=["by-state", "by-id"])
def test_a_broker_failure_is_a_few_statements(cluster, monkeypatch, by_id):
    """Fencing broker 2 gives every partition what the pure rule gives it, in a few UPDATEs, whether the
    outcomes are written by state (a condition on replicas, ISR and leader) or, for many distinct states,
    by id; topics overriding unclean.leader.election.enable are decided per topic."""
    if by_id:
        monkeypatch.setattr(election, "MAX_STATES_BY_CONDITION", 0)
    topics.create_topic("risky", 4, 3, configs={"unclean.leader.election.enable": "true"})
    topics.create_topic("strict", 4, 3)
    for name in ("risky", "strict"):
        only_in_sync(name, 2)
    before = {name: snapshot(name) for name in ("wide", "risky", "strict")}
    assert len([n for n, (leader, *_) in before["wide"].items() if leader == 2]) > 100
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        state = metadata.locked_state()
        Broker.objects.filter(broker_id=2).update(state=BrokerState.FENCED)
        assert election.on_broker_gone(2, election.live_broker_ids())
        metadata.bump(state)
    assert partition_updates(queries) <= 2 * 4 + 2  # outcomes: leader 1 or 3, ISR without 2; + risky, strict
    for name, unclean in (("wide", False), ("risky", True), ("strict", False)):
        after = snapshot(name)
        for n, (leader, isr, leader_epoch, partition_epoch) in before[name].items():
            replicas = Partition.objects.get(topic__name=name, partition=n).replicas
            expected = election.choose_after_fencing(replicas, isr, leader, 2, {1, 3}, unclean)
            assert after[n] == (expected.leader, list(expected.isr), leader_epoch + (leader != expected.leader),
                                partition_epoch + 1), (name, n)
    assert {p.leader for p in Partition.objects.filter(topic__name="strict")} == {NO_LEADER}
    assert NO_LEADER not in {p.leader for p in Partition.objects.filter(topic__name="risky")}


@pytest.mark.parametrize("by_id", [False, True], ids=["by-state", "by-id"])
def test_offline_partitions_get_leaders_in_a_few_statements(cluster, monkeypatch, by_id):
    if by_id:
        monkeypatch.setattr(election, "MAX_STATES_BY_CONDITION", 0)
    Partition.objects.filter(topic__name="wide", leader=2).update(leader=NO_LEADER)
    topics.create_topic("risky", 4, 3, configs={"unclean.leader.election.enable": "true"})
    Partition.objects.filter(topic__name="risky").update(leader=NO_LEADER, isr=[2])
    before = {name: snapshot(name) for name in ("wide", "risky")}
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        metadata.locked_state()
        assert election.elect_offline_partitions({1, 3})
    assert partition_updates(queries) <= 2 * 4 + 2
    for name, unclean in (("wide", False), ("risky", True)):
        for n, (leader, isr, leader_epoch, partition_epoch) in before[name].items():
            current = Partition.objects.get(topic__name=name, partition=n)
            if leader != NO_LEADER:
                assert (current.leader, current.leader_epoch) == (leader, leader_epoch)
                continue
            expected = election.choose_leader_for_offline(current.replicas, isr, {1, 3}, unclean)
            assert (current.leader, current.isr, current.leader_epoch, current.partition_epoch) == (
                expected.leader, list(expected.isr), leader_epoch + 1, partition_epoch + 1), (name, n)


def test_a_controlled_shutdown_is_a_few_statements(cluster):
    with CaptureQueriesContext(connection) as queries:
        services.heartbeat(3, cluster[3], shutting_down=True)
    assert partition_updates(queries) <= 2 * 4
    assert not Partition.objects.filter(leader=3).exists()
    assert not [p for p in Partition.objects.all() if 3 in p.isr]


def test_preferred_elections_and_the_rebalance_are_a_few_statements(cluster):
    services.heartbeat(1, cluster[1], shutting_down=True)
    services.register_broker(1, "PLAINTEXT://127.0.0.1:9091", None, [])
    Partition.objects.update(isr=[1, 2, 3])  # broker 1 caught up everywhere (as AlterPartition would say)
    with CaptureQueriesContext(connection) as queries:
        results = election.elect_leaders("preferred", None)
    assert results and all(r.error is None and r.leader_after == 1 for r in results)
    assert partition_updates(queries) <= 2 * 2
    assert all(p.leader == p.replicas[0] for p in Partition.objects.all())

    Partition.objects.filter(leader=1).update(leader=2)
    controller = Controller(identity="test")
    assert controller.maybe_hold_lease()
    with CaptureQueriesContext(connection) as queries:
        moved = controller.rebalance_leaders()
    assert moved > 100 and partition_updates(queries) <= 2 * 2
    assert all(p.leader == p.replicas[0] for p in Partition.objects.all())
