"""Fault tests (issue 5): an idempotent acks=all producer on RF=3, min.insync.replicas=2 keeps producing
while the partition leader, a follower, the controller or the control plane's web process is SIGKILLed
and restarted. Afterwards every acknowledged record is in the log exactly once at its acknowledged
offset, in order, and the three replicas are byte-identical up to the high watermark. Failover time
(kill → next acknowledgement) is printed (`pytest -s` shows it)."""

import statistics
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.cluster.workload import (
    AckingProducer,
    assert_replicas_identical,
    audit_acknowledged,
    consume_all,
    end_of_acknowledged,
)
from tests.support.cluster import Cluster
from tests.support.polling import wait_until

TOPIC_CONFIGS = {"min.insync.replicas": "2"}
LEADER_KILLS = 5
SESSION_TIMEOUT_S = 2.0
"""Strom's default `broker.session.timeout.ms`."""
FAILOVER_TARGET_S = 3.0
"""Issue 5's target, kill → next acknowledgement with Strom's and librdkafka's default settings. Printed,
not asserted: the test asserts the looser bounds below so that a noisy 2-core CI machine does not fail it."""
ELECTION_BOUND_S = 3.0
"""Kill → the new leader in the metadata. A killed broker's closed connection is noticed within about
0.4 s; this bound still holds if that evidence is missed and the 2 s session timeout has to expire."""
FAILOVER_BOUND_S = 6.0
"""Kill → next acknowledgement, which adds the client noticing the change (librdkafka re-queries the
metadata of partitions whose leader is down once a second)."""


def high_watermark(cluster: Cluster, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "hw"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def wait_for_progress(producer: AckingProducer, count: int = 200, timeout_s: float = 60.0) -> None:
    target = len(producer.acks) + count
    wait_until(lambda: len(producer.acks) >= target or producer.errors, timeout_s, interval_s=0.01,
               message=f"{count} more acknowledgements")
    assert not producer.errors, producer.errors[:5]


def finish_and_audit(cluster: Cluster, producer: AckingProducer, topic: str) -> None:
    producer.stop()
    assert not producer.errors, producer.errors[:5]
    cluster.wait_for_isr(topic, 3)
    hw = wait_until(lambda: (lambda h: h if h >= end_of_acknowledged(producer.acks) else None)(
        high_watermark(cluster, topic)), 30, message="the high watermark to cover every acknowledgement")
    records = consume_all(cluster.bootstrap, topic, hw)
    audit_acknowledged(producer.acks, records)
    wait_until(lambda: _identical(cluster, topic, hw), 30, message="replicas to converge")
    assert_replicas_identical(cluster, topic, hw)


def _identical(cluster: Cluster, topic: str, hw: int) -> bool:
    try:
        assert_replicas_identical(cluster, topic, hw)
        return True
    except AssertionError:
        return False


def report(what: str, failovers: list[float], elections: list[float] | None = None) -> None:
    line = (f"\n{what}: failover (kill -> next acknowledged record) " + ", ".join(f"{f:.2f}s" for f in failovers)
            + f"; median {statistics.median(failovers):.2f}s (target {FAILOVER_TARGET_S:.0f}s, client defaults)")
    if elections:
        line += f"; kill -> new leader median {statistics.median(elections):.2f}s"
    print(line)


@pytest.mark.slow
def test_leader_killed_repeatedly(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    producer = AckingProducer(cluster.bootstrap, topic_name).start()
    failovers, elections = [], []
    for _ in range(LEADER_KILLS):
        wait_for_progress(producer)
        leader = cluster.leader(topic_name)
        killed_at = time.monotonic()
        cluster.kill(leader)
        # Acknowledgements the dead leader sent just before the kill may be reported just after it: only
        # count one reported after the control plane shows the new leader.
        wait_until(lambda old=leader: cluster.leader(topic_name) not in (old, -1), 30, interval_s=0.01,
                   message="a new leader")
        new_leader_seen = time.monotonic()
        client_s = producer.wait_for_ack_after(new_leader_seen)
        print(f"\nleader {leader} killed: new leader after {new_leader_seen - killed_at:.2f}s, "
              f"then acknowledged after {client_s:.2f}s")
        failovers.append(new_leader_seen - killed_at + client_s)
        elections.append(new_leader_seen - killed_at)
        cluster.start(leader)
        cluster.wait_for_isr(topic_name, 3)
    wait_for_progress(producer)
    finish_and_audit(cluster, producer, topic_name)
    report("leader SIGKILL", failovers, elections)
    assert statistics.median(elections) <= ELECTION_BOUND_S
    assert statistics.median(failovers) <= FAILOVER_BOUND_S


@pytest.mark.slow
def test_follower_killed_repeatedly(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    producer = AckingProducer(cluster.bootstrap, topic_name).start()
    stalls = []
    for _ in range(2):
        wait_for_progress(producer)
        state = cluster.partition_state(topic_name, 0)
        follower = next(r for r in state["isr"] if r != state["leader"])
        killed_at = time.monotonic()
        cluster.kill(follower)
        wait_until(lambda gone=follower: gone not in cluster.partition_state(topic_name, 0)["isr"], 30,
                   interval_s=0.01,
                   message="the follower to leave the ISR")
        out_of_isr = time.monotonic()
        stalls.append(out_of_isr - killed_at + producer.wait_for_ack_after(out_of_isr))
        wait_for_progress(producer)
        cluster.start(follower)
        cluster.wait_for_isr(topic_name, 3)
    wait_for_progress(producer)
    finish_and_audit(cluster, producer, topic_name)
    report("follower SIGKILL", stalls)


def test_controller_and_web_killed(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    plane = cluster.plane
    producer = AckingProducer(cluster.bootstrap, topic_name).start()
    wait_for_progress(producer)
    plane.kill_controller()
    wait_for_progress(producer)  # no controller: nothing to elect, producing goes on
    plane.kill_web()
    wait_for_progress(producer)  # no control plane at all: brokers serve with the last image
    plane.start_web()
    plane.start_controller()
    plane.wait_for_controller(min_epoch=2)
    wait_for_progress(producer)
    finish_and_audit(cluster, producer, topic_name)


@pytest.mark.slow
def test_web_process_down_longer_than_the_session_fences_nobody(cluster, topic_name):
    """Brokers heartbeat through the web process: while it is down (and the controller up) no heartbeat
    arrives, yet no broker is fenced and no leader or ISR changes, during the outage or after it."""
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    plane = cluster.plane
    producer = AckingProducer(cluster.bootstrap, topic_name).start()
    wait_for_progress(producer)
    before = plane.metadata()
    partition_before = cluster.partition_state(topic_name, 0)
    plane.kill_web()
    outage_ends = time.monotonic() + 3 * SESSION_TIMEOUT_S
    wait_for_progress(producer)  # the brokers serve with the metadata they have
    wait_until(lambda: time.monotonic() >= outage_ends, 4 * SESSION_TIMEOUT_S, message="the outage to last")
    plane.start_web()
    settled = time.monotonic() + 2 * SESSION_TIMEOUT_S  # a fencing after the return would happen by now
    wait_until(lambda: time.monotonic() >= settled, 3 * SESSION_TIMEOUT_S, interval_s=0.2,
               message="a session after the return")
    after = plane.metadata()
    assert [(b["broker_id"], b["state"], b["registration_epoch"]) for b in after["brokers"]] == [
        (b["broker_id"], "running", b["registration_epoch"]) for b in before["brokers"]]
    assert cluster.partition_state(topic_name, 0) == partition_before  # (a fenced broker registers anew)
    wait_for_progress(producer)
    finish_and_audit(cluster, producer, topic_name)

