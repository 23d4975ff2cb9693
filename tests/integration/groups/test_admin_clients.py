"""The admin calls the control plane and operators use on groups, with each client's own API, against a
group that committed offsets: confluent-kafka's AdminClient (list, describe, list/alter offsets, delete,
list_offsets), kafka-python's (incl. OffsetDelete) and aiokafka's."""

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests.integration.groups.group_consumers import create_topic, produce

PARTITIONS = 2
TIMEOUT_S = 20


def committed_group(broker, topic: str, group: str, offsets: dict[int, int]) -> None:
    """A group whose members left after committing `offsets` (partition → offset): Empty, with offsets."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "meta", -1) for p, o in offsets.items()})
    consumer.close()


def test_confluent_admin_client_on_groups(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    produce(broker.bootstrap, topic_name, PARTITIONS, 10)
    group = f"admin-{topic_name}"
    committed_group(broker, topic_name, group, {0: 3, 1: 4})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert group in {g.group_id for g in listed.valid} and not listed.errors
    described = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    assert (described.state, described.members, described.coordinator.id) == (ConsumerGroupState.EMPTY, [], 1)

    def offsets() -> dict[int, int]:
        request = [ConsumerGroupTopicPartitions(group)]
        result = admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
        return {tp.partition: tp.offset for tp in result.topic_partitions}

    assert offsets() == {0: 3, 1: 4}
    altered = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [
        ConfluentTopicPartition(topic_name, 0, 0), ConfluentTopicPartition(topic_name, 1, 5)])],
        request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    assert [tp.error for tp in altered.topic_partitions] == [None, None]
    assert offsets() == {0: 0, 1: 5}
    latest = admin.list_offsets({ConfluentTopicPartition(topic_name, p): OffsetSpec.latest() for p in (0, 1)},
                                request_timeout=TIMEOUT_S)
    assert {tp.partition: f.result(TIMEOUT_S).offset for tp, f in latest.items()} == {0: 5, 1: 5}

    admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    with pytest.raises(KafkaException) as gone:
        admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    assert gone.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
    assert offsets() == {}


def test_kafka_python_admin_on_groups(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    group = f"admin-{topic_name}"
    committed_group(broker, topic_name, group, {0: 1, 1: 2})
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = {"group_id": group, "protocol_type": "", "group_state": "Empty", "group_type": "classic"}
        assert listed in admin.list_groups()
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
        tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
        assert {tp: m.offset for tp, m in admin.list_group_offsets(group)[group].items()} == {tp0: 1, tp1: 2}
        admin.delete_group_offsets(group, [tp0])  # OffsetDelete (API 47)
        assert {tp: m.offset for tp, m in admin.list_group_offsets(group)[group].items()} == {tp1: 2}
        admin.delete_groups([group])
        assert group not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()


def test_aiokafka_admin_on_groups(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    group = f"admin-{topic_name}"
    committed_group(broker, topic_name, group, {1: 7})

    async def scenario():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            assert (group, "") in await admin.list_consumer_groups()
            [description] = await admin.describe_consumer_groups([group])
            assert description.groups[0][2] == "Empty"
            offsets = await admin.list_consumer_group_offsets(group)
            assert {tp.partition: m.offset for tp, m in offsets.items()} == {1: 7}
        finally:
            await admin.close()

    asyncio.run(scenario())
