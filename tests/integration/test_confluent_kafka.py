"""confluent-kafka 2.16 (librdkafka 2.16) against a real standalone broker: produce/consume with every
codec, exact round trips, idempotence, offsets by timestamp, and every admin call it exposes."""

import time

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from tests.support.polling import wait_until

TIMEOUT_S = 20


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topic(broker, name: str, partitions: int = 1, config: dict | None = None) -> None:
    client = admin(broker)  # must outlive its futures
    futures = client.create_topics([NewTopic(name, partitions, 1, config=config or {})],
                                   operation_timeout=TIMEOUT_S)
    futures[name].result(TIMEOUT_S)


def consume(broker, topic: str, count: int, partition: int = 0, offset: int = OFFSET_BEGINNING) -> list:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "check.crcs": True})
    consumer.assign([TopicPartition(topic, partition, offset)])
    messages = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
    finally:
        consumer.close()
    assert len(messages) == count, f"consumed {len(messages)} of {count}"
    return messages


def produce(broker, topic: str, records: list[dict], **config) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, **config})
    errors = []
    for record in records:
        producer.produce(topic, **record, on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    assert not errors, errors


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_round_trip_exactly(broker, topic_name, codec):
    # The keyed records carry 2023 timestamps, the last two the producer's clock: a batch with both spans more than
    # segment.ms in record time, so the segment rolls before it (as Kafka's does), and time retention may then delete
    # the rolled segment of 2023 records before the consumer reads it (it did: 51 of 52). Kept forever here.
    create_topic(broker, topic_name, config={"retention.ms": "-1"})
    records = [
        {"key": b"k-%d" % i, "value": (b"v%d-" % i) * 200, "headers": [("h", b"x%d" % i), ("empty", None)],
         "timestamp": 1_700_000_000_000 + i}
        for i in range(50)
    ] + [{"key": b"tombstone", "value": None}, {"key": None, "value": b"no key"}]
    produce(broker, topic_name, records, **{"compression.type": codec, "acks": "all"})
    got = consume(broker, topic_name, len(records))
    for record, message in zip(records, got, strict=True):
        assert message.key() == record.get("key")
        assert message.value() == record.get("value")
        if "headers" in record:
            assert message.headers() == record["headers"]
            assert message.timestamp()[1] == record["timestamp"]
    assert [m.offset() for m in got] == list(range(len(records)))


def test_idempotent_producer_and_offsets_by_timestamp(broker, topic_name):
    create_topic(broker, topic_name, partitions=2)
    base = 1_800_000_000_000
    records = [{"value": b"%d" % i, "partition": 1, "timestamp": base + i * 1000} for i in range(30)]
    produce(broker, topic_name, records, **{"enable.idempotence": True})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    try:
        found = consumer.offsets_for_times([TopicPartition(topic_name, 1, base + 10_500)], TIMEOUT_S)
        assert found[0].offset == 11
        low, high = consumer.get_watermark_offsets(TopicPartition(topic_name, 1), TIMEOUT_S)
        assert (low, high) == (0, 30)
    finally:
        consumer.close()
    assert [m.value() for m in consume(broker, topic_name, 30, partition=1)] == [b"%d" % i for i in range(30)]


def test_admin_calls(broker, topic_name):
    client = admin(broker)
    create_topic(broker, topic_name, partitions=1, config={"retention.ms": "3600000"})
    with pytest.raises(KafkaException) as exists:
        create_topic(broker, topic_name)
    assert exists.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    with pytest.raises(KafkaException) as invalid:
        create_topic(broker, "bad/name")
    assert invalid.value.args[0].code() == 17  # INVALID_TOPIC_EXCEPTION (librdkafka: TOPIC_EXCEPTION)

    metadata = client.list_topics(timeout=TIMEOUT_S)
    assert topic_name in metadata.topics and metadata.controller_id == 1
    client.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(TIMEOUT_S)
    assert len(client.list_topics(topic_name, timeout=TIMEOUT_S).topics[topic_name].partitions) == 3

    resource = ConfigResource(ResourceType.TOPIC, topic_name)
    configs = client.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["retention.ms"].value == "3600000" and configs["cleanup.policy"].value == "delete"
    client.alter_configs([ConfigResource(ResourceType.TOPIC, topic_name,
                                         set_config={"segment.ms": "600000"})])[resource].result(TIMEOUT_S)
    configs = client.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["segment.ms"].value == "600000" and configs["retention.ms"].value != "3600000"
    incremental = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([incremental])[incremental].result(TIMEOUT_S)
    configs = client.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["retention.ms"].value == "7200000" and configs["segment.ms"].value == "600000"
    broker_resource = ConfigResource(ResourceType.BROKER, "1")
    assert "log.dirs" in client.describe_configs([broker_resource])[broker_resource].result(TIMEOUT_S)

    produce(broker, topic_name, [{"value": b"x", "partition": 0}] * 10)
    tp = TopicPartition(topic_name, 0, 4)
    deleted = client.delete_records([tp])[tp].result(TIMEOUT_S)
    assert deleted.low_watermark == 4
    latest = client.list_offsets({TopicPartition(topic_name, 0): OffsetSpec.latest()})
    assert next(iter(latest.values())).result(TIMEOUT_S).offset == 10
    earliest = client.list_offsets({TopicPartition(topic_name, 0): OffsetSpec.earliest()})
    assert next(iter(earliest.values())).result(TIMEOUT_S).offset == 4

    cluster = client.describe_cluster().result(TIMEOUT_S)
    assert [node.id for node in cluster.nodes] == [1]

    client.delete_topics([topic_name], operation_timeout=TIMEOUT_S)[topic_name].result(TIMEOUT_S)
    wait_until(lambda: topic_name not in client.list_topics(timeout=TIMEOUT_S).topics, TIMEOUT_S)
