"""A broker's own lifecycle in the cluster: a clean stop (SIGTERM) is Kafka's controlled shutdown, so
leadership moves before the listener closes and producers barely stall; a topic deleted while a broker was
down loses its logs on that broker when it starts again, also when a new topic of the same name was created
meanwhile (its topic id, kept in each log's `partition.metadata`, differs)."""

import time
import uuid

import pytest
from confluent_kafka import Producer

from brokerd.storage import topic_id_file
from tests.integration.cluster.test_faults import TOPIC_CONFIGS, finish_and_audit, wait_for_progress
from tests.integration.cluster.workload import AckingProducer
from tests.support.polling import wait_until


@pytest.mark.slow
def test_controlled_shutdown_moves_leadership_before_the_broker_stops(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    producer = AckingProducer(cluster.bootstrap, topic_name).start()
    wait_for_progress(producer)
    leader = cluster.leader(topic_name)
    stopped_at = time.monotonic()
    cluster.stop(leader)  # SIGTERM; returns once the process exited
    log = cluster.brokers[leader].log_file.read_text()
    assert "controlled shutdown: leads no partition any more" in log, log[-3000:]
    assert cluster.leader(topic_name) not in (leader, -1)
    wait_for_progress(producer)
    times = [a.at for a in producer.acks if a.at >= stopped_at]
    pause = max(b - a for a, b in zip(times[:-1], times[1:], strict=True))
    print(f"\nleader {leader} stopped cleanly: longest pause between acknowledgements {pause:.2f}s")
    cluster.start(leader)
    cluster.wait_for_isr(topic_name, 3)
    finish_and_audit(cluster, producer, topic_name)


def test_topic_deleted_while_a_broker_was_down_loses_its_logs_there(cluster, topic_name):
    cluster.create_topic(topic_name, 2, 3)
    cluster.wait_for_isr(topic_name, 3)
    broker = cluster.brokers[3]
    partition_dirs = [broker.log_dir / f"{topic_name}-{p}" for p in range(2)]
    wait_until(lambda: all(d.is_dir() for d in partition_dirs), 30, message="broker 3's replicas")
    cluster.stop(3)
    status, body = cluster.plane.call("DELETE", f"/internal/v1/topics/{topic_name}")
    assert status == 204, body
    assert all(d.is_dir() for d in partition_dirs)  # nobody told broker 3
    cluster.start(3)
    wait_until(lambda: not any(d.exists() for d in partition_dirs), 30, message="the stray logs deleted")
    wait_until(lambda: sum(1 for b in cluster.plane.metadata()["brokers"] if b["state"] == "running") == 3, 30,
               message="broker 3 back")


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0


def _stored_bytes(directory) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def test_topic_recreated_under_the_same_name_while_a_broker_was_down_is_another_topic_there(cluster, topic_name):
    cluster.create_topic(topic_name, 2, 3)
    cluster.wait_for_isr(topic_name, 3)
    broker = cluster.brokers[3]
    old_dirs = [broker.log_dir / f"{topic_name}-{p}" for p in range(2)]
    _produce(cluster.bootstrap, topic_name, [b"old-%d" % i for i in range(5)])
    wait_until(lambda: b"old-4" in _stored_bytes(old_dirs[0]), 30, message="broker 3's copy of the old topic")
    old_id = topic_id_file.read(old_dirs[0])
    assert old_id is not None
    cluster.stop(3)
    status, body = cluster.plane.call("DELETE", f"/internal/v1/topics/{topic_name}")
    assert status == 204, body
    recreated = cluster.create_topic(topic_name, assignments=[[1, 2, 3]])  # broker 3 is down, still a replica
    new_id = uuid.UUID(recreated["topic_id"])
    assert new_id != old_id
    _produce(cluster.bootstrap, topic_name, [b"new-%d" % i for i in range(3)])
    cluster.start(3)
    cluster.wait_for_isr(topic_name, 3, timeout_s=60)
    wait_until(lambda: b"new-2" in _stored_bytes(old_dirs[0]), 30, message="broker 3's copy of the new topic")
    assert topic_id_file.read(old_dirs[0]) == new_id
    assert b"old-" not in _stored_bytes(old_dirs[0])  # the old topic's records were never kept as the new one's
    assert not old_dirs[1].exists()  # the old topic's second partition is gone
