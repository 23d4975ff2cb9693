"""Burrow 1.2.1 (Debian's `burrow`, the lag checker Strom sets out to replace) pointed at a running Strom
cluster (control plane and three brokers): its HTTP API lists Strom's topics and a consumer group, and
evaluates a group that keeps up as OK. Burrow speaks sarama at kafka-version 2.1.0 and reads
`__consumer_offsets` itself, so this also proves Kafka's own offset record formats are what Strom writes."""

import json
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.support.broker import REPO_ROOT
from tests.support.burrow import burrow
from tests.support.clients import requests_seen
from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

TOPIC = "burrow-orders"
GROUP = "burrow-healthy-group"


class KeepingUp:
    """A producer and a consumer group member that keeps up with it, committing, until stopped (bounded)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.consumed = 0
        self.threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        deadline = time.monotonic() + 240
        while not self.stop.is_set() and time.monotonic() < deadline:
            producer.produce(TOPIC, b"order")
            producer.poll(0)
            self.stop.wait(0.05)
        producer.flush(10)

    def _consume(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                             "enable.auto.commit": True, "auto.commit.interval.ms": 500})
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 240
        while not self.stop.is_set() and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                self.consumed += 1
        consumer.close()

    def __enter__(self) -> "KeepingUp":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)


def _group_status(running) -> str | None:
    body = running.get(f"/consumer/{GROUP}/status")
    status = body.get("status") or {}
    return status.get("status") if not body.get("error") and status.get("partition_count") == 3 else None


def _offsets_topic_led(bootstrap: str) -> bool:
    """Every `__consumer_offsets` partition answers ListOffsets from its leader. Burrow 1.2.1 exits when its
    consumer module fails to start, and a partition whose leader has not yet taken over refuses the first
    request with NOT_LEADER_OR_FOLLOWER; in production Burrow is pointed at a cluster long past that moment."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "burrow-test-probe"})
    try:
        partitions = reader.list_topics("__consumer_offsets", timeout=5).topics["__consumer_offsets"].partitions
        for partition in partitions:
            reader.get_watermark_offsets(TopicPartition("__consumer_offsets", partition), timeout=5)
        return bool(partitions)
    except KafkaException:
        return False
    finally:
        reader.close()


def test_burrow_lists_strom_topics_and_groups_and_reports_a_healthy_group_ok(tmp_path):
    with control_plane(tmp_path) as plane, broker_cluster(plane, tmp_path, 3) as cluster:
        cluster.create_topic(TOPIC, 3, 3)
        cluster.wait_for_isr(TOPIC, 3)
        with KeepingUp(cluster.bootstrap) as workload:
            wait_until(lambda: workload.consumed > 0, 60, message="the group consumes")
            wait_until(lambda: _offsets_topic_led(cluster.bootstrap), 60, message="__consumer_offsets led")
            with burrow(tmp_path / "burrow", [f"127.0.0.1:{b.port}" for b in cluster.brokers.values()]) as running:
                wait_until(lambda: TOPIC in running.get("/topic").get("topics", []), 60,
                           message="Burrow lists the topic")
                wait_until(lambda: GROUP in running.get("/consumer").get("consumers", []), 60,
                           message="Burrow lists the group")
                assert wait_until(lambda: _group_status(running) == "OK", 90,
                                  message="Burrow evaluates the group OK")
                lag = running.get(f"/consumer/{GROUP}/lag")["status"]
                assert {p["topic"] for p in lag["partitions"]} == {TOPIC}
        seen = {}
        for broker in cluster.brokers.values():
            for api, versions in requests_seen(broker.log_file, "burrow-strom").items():
                seen[api] = sorted(set(seen.get(api, [])) | set(versions))
    (REPO_ROOT / "var" / "clients" / "requests").mkdir(parents=True, exist_ok=True)
    (REPO_ROOT / "var" / "clients" / "requests" / "burrow.json").write_text(json.dumps(seen, indent=1) + "\n")
    print(f"burrow: {seen}")
    assert seen["METADATA"] == [5]  # the request Strom once refused
