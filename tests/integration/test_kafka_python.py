"""kafka-python 3.0.12 against a real standalone broker: its default (idempotent, acks=all) producer,
exact round trips (no compression and gzip here; snappy, lz4 and zstd, and a partition mixing every codec,
in test_kafka_python_codecs.py), offsets by timestamp, and its admin calls."""

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidTopicError, TopicAlreadyExistsError

from tests.support.polling import wait_until

TIMEOUT_MS = 20_000


def consume(broker, topic: str, count: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=TIMEOUT_MS)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    records = []
    for record in consumer:
        records.append(record)
        if len(records) == count:
            break
    consumer.close()
    assert len(records) == count
    return records


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_default_idempotent_producer_round_trips_exactly(broker, topic_name, codec):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=5)
    sent = [(b"key-%d" % i if i % 3 else None, None if i == 7 else b"value-%d" % i,
             [("h1", b"a"), ("h2", b"")] if i % 2 else [], 1_700_000_000_000 + i) for i in range(40)]
    futures = [producer.send(topic_name, key=k, value=v, headers=h, timestamp_ms=t) for k, v, h, t in sent]
    offsets = [f.get(timeout=20).offset for f in futures]
    producer.close()
    assert offsets == list(range(40))
    got = consume(broker, topic_name, 40)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [(k, v, h, t) for k, v, h, t in sent]


def test_offsets_for_times_and_end_offsets(broker, topic_name):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(10):
        producer.send(topic_name, value=b"x", timestamp_ms=2_000_000_000_000 + i * 100)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = TopicPartition(topic_name, 0)
    assert consumer.offsets_for_times({tp: 2_000_000_000_450})[tp].offset == 5
    assert consumer.offsets_for_times({tp: 3_000_000_000_000})[tp] is None
    assert consumer.end_offsets([tp])[tp] == 10 and consumer.beginning_offsets([tp])[tp] == 0
    consumer.close()


def test_admin_calls(broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=TIMEOUT_MS)
    admin.create_topics([NewTopic(topic_name, 2, 1, topic_configs={"retention.ms": "1000000"})])
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(topic_name, 1, 1)])
    with pytest.raises(InvalidTopicError):
        admin.create_topics([NewTopic("bad name", 1, 1)])
    assert topic_name in admin.list_topics()
    (topic,) = admin.describe_topics([topic_name])
    assert len(topic["partitions"]) == 2
    admin.create_partitions({topic_name: NewPartitions(4)})
    wait_until(lambda: len(admin.describe_topics([topic_name])[0]["partitions"]) == 4)

    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, configs={"segment.ms": "500000"})])
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name)])
    modified = described["topic"][topic_name]
    assert {name: entry["value"] for name, entry in modified.items()} == {
        "retention.ms": "1000000", "segment.ms": "500000"}
    cluster = admin.describe_cluster()
    assert cluster["controller_id"] == 1 and len(cluster["brokers"]) == 1

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for _ in range(6):
        producer.send(topic_name, value=b"x", partition=0)
    producer.flush()
    producer.close()
    deleted = admin.delete_records({TopicPartition(topic_name, 0): 3})
    assert deleted[TopicPartition(topic_name, 0)]["low_watermark"] == 3
    assert admin.list_groups() == []
    assert admin.list_partition_reassignments() == {}

    admin.delete_topics([topic_name])
    wait_until(lambda: topic_name not in admin.list_topics())
    admin.close()
