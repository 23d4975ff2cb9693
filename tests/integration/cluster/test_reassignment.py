"""Partition reassignment on real brokers (issue 13): kafka-python's admin client moves a partition from
brokers 1, 2 to 3, 4 while an idempotent acks=all producer keeps writing; the new replicas catch up, join
the ISR, the leader moves to 3 and the removed replicas' logs leave the disk. Then a reassignment that
cannot finish (its new replica's broker is down) is listed and cancelled over the wire, with Kafka's
errors for a bad target and for cancelling nothing. Afterwards every
acknowledged record is in the log exactly once, and the replicas are byte-identical up to the high
watermark."""

import time

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from tests.integration.cluster.test_faults import high_watermark, wait_for_progress
from tests.integration.cluster.workload import AckingProducer, audit_acknowledged, consume_all, replica_bytes
from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def cluster4(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cluster")
    with control_plane(directory) as plane, broker_cluster(plane, directory, 4) as running:
        yield running


@pytest.mark.slow
def test_move_a_partition_under_load_then_cancel_one_over_the_wire(cluster4, topic_name):
    cluster = cluster4
    cluster.create_topic(topic_name, assignments=[[1, 2]], configs={"min.insync.replicas": "2"})
    tp = TopicPartition(topic_name, 0)
    producer = AckingProducer(cluster.bootstrap, topic_name, rate_per_s=500).start()
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        wait_for_progress(producer)
        assert admin.alter_partition_reassignments({tp: [3, 4]}) == {tp: None}
        moved = wait_until(lambda: (lambda s: s if s["replicas"] == [3, 4] else None)(
            cluster.partition_state(topic_name, 0)), 60, message="the reassignment to complete")
        assert (moved["isr"], moved["leader"], moved["adding_replicas"]) == ([3, 4], 3, [])
        assert admin.list_partition_reassignments() == {}
        wait_for_progress(producer)  # the producer follows the leader to broker 3
        for gone in (1, 2):
            wait_until(lambda b=gone: not (cluster.brokers[b].log_dir / f"{topic_name}-0").exists(), 30,
                       message=f"broker {gone} to delete its removed replica")

        # A reassignment that cannot complete: broker 2 is down, so its new replica never catches up.
        # (Broker 1, the lowest running id, stays up: it is the controller admin clients talk to.)
        cluster.stop(2)
        assert admin.alter_partition_reassignments({tp: [3, 4, 2]}) == {tp: None}
        assert admin.list_partition_reassignments() == {
            tp: {"replicas": [3, 4, 2], "adding_replicas": [2], "removing_replicas": []}}
        assert admin.alter_partition_reassignments({tp: [3, 9]}) == {tp: InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
        assert cluster.partition_state(topic_name, 0)["replicas"] == [3, 4]
        wait_for_progress(producer)
    finally:
        admin.close()
        producer.stop()
        cluster.start(2)

    assert not producer.errors, producer.errors[:5]
    hw = wait_until(lambda: (lambda h: h if h >= max(a.offset for a in producer.acks) + 1 else None)(
        high_watermark(cluster, topic_name)), 30, message="the high watermark to cover every acknowledgement")
    audit_acknowledged(producer.acks, consume_all(cluster.bootstrap, topic_name, hw))
    copies = wait_until(lambda: (lambda c: c if c[3] == c[4] else None)(
        {b: replica_bytes(cluster.brokers[b].log_dir, topic_name, hw) for b in (3, 4)}), 30,
        message="the new replicas to converge")
    assert copies[3], "no data below the high watermark"
    print(f"\nmoved {topic_name}-0 from [1, 2] to [3, 4] under load: {len(producer.acks)} records acknowledged, "
          f"{len(copies[3])} bytes per replica below HW {hw}")


THROTTLE = 2_000_000
"""bytes/s: issue 13's 2 MB/s."""
THROTTLED_BYTES = 12_000_000


def log_bytes(directory) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.log")) if directory.exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize("side", ["follower", "leader"])
def test_a_throttled_new_replica_copies_at_the_throttle_rate(cluster4, topic_name, side):
    """Kafka's throttle configs, set as kafka-reassign-partitions --throttle does, bound the copy to a new
    replica; the rate is measured from its log's growth on disk, between 10 % and 90 % of the data. Only one
    side's rate is set, so each side is shown to hold the rate on its own."""
    cluster = cluster4
    cluster.create_topic(topic_name, assignments=[[1, 2]])
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
    for _ in range(THROTTLED_BYTES // 10_000):
        producer.produce(topic_name, b"x" * 10_000, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    del producer  # librdkafka would keep reconnecting to the brokers after the module's cluster stops
    status, body = cluster.plane.call("POST", f"/internal/v1/topics/{topic_name}/configs", {"set": {
        "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:3"}})
    assert status == 200, body
    unthrottled = {"leader": "follower", "follower": "leader"}[side]
    status, body = cluster.plane.call("POST", "/internal/v1/brokers/configs", {
        "broker_ids": [1, 2, 3], "set": {f"{side}.replication.throttled.rate": THROTTLE},
        "delete": [f"{unthrottled}.replication.throttled.rate"]})
    assert status == 200, body
    copy = cluster.brokers[3].log_dir / f"{topic_name}-0"
    total = log_bytes(cluster.brokers[1].log_dir / f"{topic_name}-0")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        assert admin.alter_partition_reassignments({TopicPartition(topic_name, 0): [1, 2, 3]}) == {
            TopicPartition(topic_name, 0): None}
        samples = []
        wait_until(lambda: samples.append((time.monotonic(), log_bytes(copy))) or samples[-1][1] >= total, 60,
                   interval_s=0.05, message="the new replica to copy the log")
    finally:
        admin.close()
    start = next(s for s in samples if s[1] >= total * 0.1)
    end = next(s for s in samples if s[1] >= total * 0.9)
    measured = (end[1] - start[1]) / (end[0] - start[0])
    print(f"\n{side}-throttled copy: {measured / 1e6:.2f} MB/s measured for a {THROTTLE / 1e6:.0f} MB/s throttle "
          f"({total / 1e6:.1f} MB, {(end[0] - start[0]):.1f} s between 10 % and 90 %)")
    assert THROTTLE * 0.85 <= measured <= THROTTLE * 1.15
    wait_until(lambda: not cluster.partition_state(topic_name, 0)["adding_replicas"], 30,
               message="the reassignment to complete")  # (replicas are [1, 2, 3] while it runs, too)
    image = cluster.plane.metadata()  # completion released the throttles
    assert image["broker_configs"] == {}
    assert next(t["configs"] for t in image["topics"] if t["name"] == topic_name) == {}
