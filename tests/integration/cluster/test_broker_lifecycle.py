"""A broker's own lifecycle in the cluster: a clean stop (SIGTERM) is Kafka's controlled shutdown, so
leadership moves before the listener closes and producers barely stall; a topic deleted while a broker was
down loses its logs on that broker when it starts again."""

import time

import pytest

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
