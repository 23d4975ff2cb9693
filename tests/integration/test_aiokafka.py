"""aiokafka 0.14 against a real standalone broker: every codec (cramjam), exact round trips, the
idempotent producer, offsets by timestamp, and its admin calls."""

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

TIMEOUT_S = 20


async def consume(broker, topic: str, count: int) -> list:
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        records = []
        while len(records) < count:
            async with asyncio.timeout(TIMEOUT_S):
                batch = await consumer.getmany(tp, timeout_ms=1000)
            records += batch.get(tp, [])
        return records
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_with_every_codec_and_idempotence(broker, topic_name, codec):
    async def scenario():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec,
                                    enable_idempotence=True, linger_ms=5)
        await producer.start()
        sent = [(b"k%d" % i, None if i == 3 else b"value-%d" % i * 50, [("h", b"%d" % i)],
                 1_700_000_000_000 + i) for i in range(30)]
        try:
            futures = [await producer.send(topic_name, key=k, value=v, headers=h, timestamp_ms=t)
                       for k, v, h, t in sent]
            offsets = [(await f).offset for f in futures]
        finally:
            await producer.stop()
        assert offsets == list(range(30))
        got = await consume(broker, topic_name, 30)
        assert [(r.key, r.value, list(r.headers), r.timestamp) for r in got] == [
            (k, v, [(hk, hv) for hk, hv in h], t) for k, v, h, t in sent]

    asyncio.run(scenario())


def test_offsets_for_times(broker, topic_name):
    async def scenario():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        for i in range(5):
            await producer.send_and_wait(topic_name, b"x", timestamp_ms=1_900_000_000_000 + i * 10)
        await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
        await consumer.start()
        tp = TopicPartition(topic_name, 0)
        try:
            found = await consumer.offsets_for_times({tp: 1_900_000_000_025})
            assert found[tp].offset == 3
            assert (await consumer.end_offsets([tp]))[tp] == 5
        finally:
            await consumer.stop()

    asyncio.run(scenario())


def test_admin_calls(broker, topic_name):
    async def scenario():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic_name, 1, 1, topic_configs={"retention.ms": "999000"})])
            response = await admin.create_topics([NewTopic(topic_name, 1, 1)])
            assert response.topic_errors[0][1] == TopicAlreadyExistsError.errno
            assert topic_name in await admin.list_topics()
            await admin.create_partitions({topic_name: NewPartitions(2)})
            await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name,
                                                      configs={"segment.ms": "400000"})])
            (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name)])
            configs = {entry[0]: entry[1] for entry in response.resources[0][4]}
            assert configs["segment.ms"] == "400000" and configs["cleanup.policy"] == "delete"
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
            await producer.start()
            for _ in range(4):
                await producer.send_and_wait(topic_name, b"x", partition=0)
            await producer.stop()
            tp = TopicPartition(topic_name, 0)
            assert (await admin.delete_records({tp: RecordsToDelete(2)}))[tp] == 2
            assert (await admin.describe_cluster())["controller_id"] == 1
            assert await admin.list_consumer_groups() == []
            await admin.delete_topics([topic_name])
            assert topic_name not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(scenario())
