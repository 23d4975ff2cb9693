"""Real confluent-kafka clients for the consumer-group tests against a real broker: topics, records, members that
join a group and commit, and what a real consumer sees as committed."""

import contextlib

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.polling import wait_until

TIMEOUT_S = 30
# Fast group joins (no initial rebalance delay) and a small __consumer_offsets.
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "5"}


def create_topic(broker, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=TIMEOUT_S)[name].result(TIMEOUT_S)


def produce(broker, topic: str, counts: dict[int, int], timestamps_ms: list[int] | None = None) -> None:
    """`counts[p]` records into partition p (with the given record timestamps, if any)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for partition, count in counts.items():
        for i in range(count):
            extra = {"timestamp": timestamps_ms[i]} if timestamps_ms else {}
            producer.produce(topic, f"record {i}".encode(), partition=partition, **extra)
    assert producer.flush(TIMEOUT_S) == 0


@contextlib.contextmanager
def member(broker, group: str, topic: str, **config):
    """A consumer that joined `group` and got its assignment; it leaves the group (LeaveGroup) on exit."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "lag-test",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **config})
    consumer.subscribe([topic])
    try:
        wait_until(lambda: consumer.poll(0.1) is not None or consumer.assignment(), TIMEOUT_S,
                   message=f"an assignment in {group}")
        yield consumer
    finally:
        consumer.close()


def commit(broker, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit as a real member of `group`, then leave it (the group is Empty afterwards)."""
    with member(broker, group, topic) as consumer:
        consumer.commit(offsets=[KafkaTopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def first_offsets_consumed(broker, group: str, topic: str, partitions: int) -> dict[int, int]:
    """Join `group` and return the offset of the first record consumed from each partition."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "latest"})
    consumer.subscribe([topic])
    first: dict[int, int] = {}

    def every_partition_started() -> bool:
        if (message := consumer.poll(0.1)) is not None and message.error() is None:
            first.setdefault(message.partition(), message.offset())
        return len(first) == partitions

    try:
        wait_until(every_partition_started, TIMEOUT_S, message="a record from every partition")
    finally:
        consumer.close()
    return first


def committed(broker, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets as a real consumer sees them (OffsetFetch)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        answer = consumer.committed([KafkaTopicPartition(topic, p) for p in range(partitions)], timeout=TIMEOUT_S)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in answer if tp.offset >= 0}
