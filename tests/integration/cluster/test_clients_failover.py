"""kafka-python, aiokafka and kcat produce and consume through a leader change (each retrying as it
normally does, with its default metadata refresh and backoffs): every record they were told was written is
consumed afterwards."""

import asyncio
import shutil
import subprocess
import time

import pytest

from tests.support.cluster import Cluster
from tests.support.polling import wait_until


def _kill_leader_and_restart(cluster: Cluster, topic: str) -> None:
    leader = cluster.leader(topic)
    cluster.kill(leader)
    wait_until(lambda: cluster.leader(topic) not in (leader, -1), 30, message="a new leader")
    cluster.start(leader)


def _values_consumed_kafka_python(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             consumer_timeout_ms=2000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(values) < expected and time.monotonic() < deadline:
        values += [m.value for m in consumer]
    consumer.close()
    return values


def test_kafka_python_through_leader_change(cluster, topic_name):
    from kafka import KafkaProducer

    cluster.create_topic(topic_name, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_isr(topic_name, 3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    sent = [producer.send(topic_name, f"a{i}".encode(), partition=0) for i in range(100)]
    producer.flush(30)
    _kill_leader_and_restart(cluster, topic_name)
    sent += [producer.send(topic_name, f"b{i}".encode(), partition=0) for i in range(100)]
    producer.flush(60)
    offsets = [future.get(timeout=60).offset for future in sent]
    producer.close()
    assert offsets == sorted(offsets)
    cluster.wait_for_isr(topic_name, 3)
    values = _values_consumed_kafka_python(cluster.bootstrap, topic_name, 200)
    assert values == [f"a{i}".encode() for i in range(100)] + [f"b{i}".encode() for i in range(100)]


def test_aiokafka_through_leader_change(cluster, topic_name):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    cluster.create_topic(topic_name, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_isr(topic_name, 3)

    async def produce(prefix: str) -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", enable_idempotence=True)
        await producer.start()
        try:
            offsets = []
            for i in range(50):
                for attempt in range(100):  # aiokafka surfaces NOT_LEADER after its retries; resend like apps do
                    try:
                        offsets.append((await producer.send_and_wait(topic_name, f"{prefix}{i}".encode(),
                                                                     partition=0)).offset)
                        break
                    except Exception:  # noqa: BLE001 - retriable leadership errors during the change
                        if attempt == 99:
                            raise
                        await asyncio.sleep(0.1)
            return offsets
        finally:
            await producer.stop()

    async def consume(expected: int) -> list[bytes]:
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            partition = TopicPartition(topic_name, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            values: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(values) < expected and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=1000)).values():
                    values += [m.value for m in messages]
            return values
        finally:
            await consumer.stop()

    first = asyncio.run(produce("a"))
    _kill_leader_and_restart(cluster, topic_name)
    second = asyncio.run(produce("b"))
    assert first + second == sorted(first + second)
    cluster.wait_for_isr(topic_name, 3)
    assert asyncio.run(consume(100)) == [f"a{i}".encode() for i in range(50)] + [f"b{i}".encode() for i in range(50)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_through_leader_change(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_isr(topic_name, 3)

    def produce(prefix: str) -> None:
        lines = "".join(f"{prefix}{i}\n" for i in range(50))
        subprocess.run(["kcat", "-P", "-b", cluster.bootstrap, "-t", topic_name, "-p", "0", "-X", "acks=all",
                        "-X", "message.timeout.ms=60000"],
                       input=lines.encode(), check=True, timeout=90)

    produce("a")
    _kill_leader_and_restart(cluster, topic_name)
    produce("b")
    cluster.wait_for_isr(topic_name, 3)
    out = subprocess.run(["kcat", "-C", "-b", cluster.bootstrap, "-t", topic_name, "-p", "0", "-o", "beginning",
                          "-e", "-q"], check=True, capture_output=True, timeout=90).stdout.decode().split()
    assert out == [f"a{i}" for i in range(50)] + [f"b{i}" for i in range(50)]
