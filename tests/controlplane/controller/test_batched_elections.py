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
from controlplane.topics.models import Partition

PARTITIONS = 600


def partition_updates(queries) -> int:
    return sum(1 for q in queries if q["sql"].startswith('UPDATE "topics_partition"'))


@pytest.fixture
def cluster(db):
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", None, [])["registration_epoch"]
              for b in (1, 2, 3)}
    topics.create_topic("wide", PARTITIONS, 3)
    return epochs


def snapshot() -> dict:
    return {p.partition: (p.leader, list(p.isr), p.leader_epoch, p.partition_epoch)
            for p in Partition.objects.filter(topic__name="wide")}


def test_a_broker_failure_is_a_few_statements(cluster):
    before = snapshot()
    led = [n for n, (leader, *_) in before.items() if leader == 2]
    assert len(led) > 100
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        state = metadata.locked_state()
        Broker.objects.filter(broker_id=2).update(state=BrokerState.FENCED)
        assert election.on_broker_gone(2, election.live_broker_ids())
        metadata.bump(state)
    assert partition_updates(queries) <= 2 * 4  # outcomes: leader 1 or 3, ISR without 2; chunks of 500
    after = snapshot()
    for n, (leader, isr, leader_epoch, partition_epoch) in before.items():
        expected = election.choose_after_fencing(Partition.objects.get(topic__name="wide", partition=n).replicas,
                                                 isr, leader, 2, {1, 3}, False)
        assert after[n] == (expected.leader, list(expected.isr), leader_epoch + (leader != expected.leader),
                            partition_epoch + 1)


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
    assert len(moved) > 100 and partition_updates(queries) <= 2 * 2
    assert all(p.leader == p.replicas[0] for p in Partition.objects.all())
