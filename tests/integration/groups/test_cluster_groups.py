"""Consumer groups in a 3-broker cluster with a real control plane; `__consumer_offsets` is created on demand
with Kafka's defaults (50 partitions, replication factor 3).

- The coordinator broker is SIGKILLed while 3 members consume and commit: the group resumes on the new
  leader of its `__consumer_offsets` partition from the committed offsets (no committed offset goes
  backwards), and every acknowledged record is consumed at least once. The resume time is printed.
- Committed offsets survive stopping and starting every broker.
"""

import time

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from kafkaspec.consumer_offsets import partition_for
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC
from tests.integration.groups.conftest import GROUP_OVERRIDES
from tests.integration.groups.group_consumers import ConsumerGroup, ProducerThread, produce
from tests.support.cluster import Cluster, broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until

PARTITIONS = 6
SESSION_MS = 6_000
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default (not overridden)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cluster")
    with control_plane(directory) as plane, broker_cluster(plane, directory, 3, GROUP_OVERRIDES) as running:
        yield running


def committed(cluster: Cluster, group: str) -> dict[int, int] | None:
    """The group's committed offsets (partition → offset) as its coordinator answers, None on an error.
    A fresh kafka-python admin client per call: it caches a group's coordinator for its lifetime. (Not
    confluent-kafka's: librdkafka 2.16's AdminClient can abort the process on an assertion when its
    coordinator requests fail against a dead broker.)"""
    try:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=5000)
    except KafkaError:
        return None
    try:
        return {tp.partition: meta.offset for tp, meta in admin.list_group_offsets(group)[group].items()}
    except KafkaError:
        return None
    finally:
        admin.close()


def coordinator_of(cluster: Cluster, group: str) -> int:
    return cluster.leader(CONSUMER_OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS))


def create_replicated_topic(cluster: Cluster, name: str, partitions: int) -> None:
    cluster.create_topic(name, partitions, 3, {"min.insync.replicas": "2"})
    for partition in range(partitions):
        cluster.wait_for_isr(name, 3, partition)


@pytest.mark.slow
def test_coordinator_killed_mid_consumption_group_resumes_from_committed_offsets(cluster, topic_name, tmp_path):
    create_replicated_topic(cluster, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    producer = ProducerThread(cluster.bootstrap, topic_name, PARTITIONS).start()
    coordinator = None
    try:
        with ConsumerGroup("confluent-kafka", cluster.bootstrap, group, topic_name, "range", SESSION_MS, 3,
                           tmp_path) as consumers:
            consumers.wait_for_full_assignment(PARTITIONS, timeout_s=90)
            before = wait_until(lambda: (lambda c: c if c and len(c) == PARTITIONS else None)(
                committed(cluster, group)), 60, message="every partition committed")
            coordinator = coordinator_of(cluster, group)
            killed_at = time.monotonic()
            cluster.kill(coordinator)

            def resumed() -> dict[int, int] | None:
                now = committed(cluster, group)
                return now if now and all(now.get(p, -1) > before[p] for p in before) else None

            after = wait_until(resumed, 60, interval_s=0.05, message="commits to resume on a new coordinator")
            resumed_at = time.monotonic()
            new_coordinator = coordinator_of(cluster, group)
            print(f"\ncoordinator broker {coordinator} SIGKILLed -> group committing again on broker "
                  f"{new_coordinator} after {resumed_at - killed_at:.2f}s")
            assert new_coordinator not in (coordinator, -1)
            assert all(after[p] >= before[p] for p in before), (before, after)

            acked_at_resume = len(producer.acked)
            wait_until(lambda: len(producer.acked) > acked_at_resume + 200, 60, message="more records acknowledged")
            producer.stop()
            assert not producer.errors, producer.errors[:5]
            acked = {(p, o) for p, o, _ in producer.acked}
            wait_until(lambda: acked <= {(r.partition, r.offset) for r in consumers.received()}, 60,
                       message="every acknowledged record consumed")
            ends = {p: max(o for q, o in acked if q == p) + 1 for p in range(PARTITIONS)}
            final = wait_until(lambda: (lambda c: c if c == ends else None)(committed(cluster, group)), 60,
                               message=f"the group to commit up to the end offsets {ends}")
            assert all(final[p] >= after[p] for p in after)
    finally:
        producer.stop()
        if coordinator is not None and not cluster.brokers[coordinator].alive:
            cluster.start(coordinator)


@pytest.mark.slow
def test_committed_offsets_survive_a_full_cluster_restart(cluster, topic_name, tmp_path):
    for broker_id, broker in cluster.brokers.items():
        if not broker.alive:
            cluster.start(broker_id)
    create_replicated_topic(cluster, topic_name, 3)
    group = f"g-{topic_name}"
    produce(cluster.bootstrap, topic_name, 3, 30)
    with ConsumerGroup("kafka-python", cluster.bootstrap, group, topic_name, "range", SESSION_MS, 1,
                       tmp_path) as consumers:
        wait_until(lambda: len(consumers.received()) >= 30, 60, message="30 records consumed")
    before = wait_until(lambda: committed(cluster, group), 30, message="the committed offsets")
    assert before == {0: 10, 1: 10, 2: 10}

    for broker_id in cluster.brokers:
        cluster.stop(broker_id)
    started = time.monotonic()
    for broker_id in cluster.brokers:
        cluster.start(broker_id)
    after = wait_until(lambda: committed(cluster, group), 90, interval_s=0.1, message="offsets after the restart")
    print(f"\nfull cluster restart: committed offsets readable {time.monotonic() - started:.2f}s after the first "
          f"broker started")
    assert after == before
