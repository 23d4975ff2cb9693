"""One group consumer as a process, so tests can SIGKILL it:

    python -m tests.integration.groups.consumer_worker CLIENT BOOTSTRAP GROUP TOPIC ASSIGNOR SESSION_MS [INSTANCE_ID]

CLIENT is kafka-python, confluent-kafka or aiokafka; ASSIGNOR is range, roundrobin or cooperative-sticky
(aiokafka: sticky); INSTANCE_ID makes a static member (`group.instance.id`, confluent-kafka only).
It subscribes with auto.offset.reset=earliest and auto commit every 200 ms, and writes JSON lines to stdout:
`{"assignment": [partition, …]}` whenever its assignment changes (checked after every poll) and
`{"records": [[partition, offset, value], …]}` for what each poll returned, and (confluent-kafka)
`{"rebalance": "assign"|"revoke"}` from its rebalance callbacks. SIGTERM closes it cleanly (commit, and
LeaveGroup unless static).
"""

import asyncio
import json
import signal
import sys
import threading

POLL_MS = 100
COMMIT_INTERVAL_MS = 200


def emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Reporter:
    """Emits the assignment when it changed, and every batch of records."""

    def __init__(self) -> None:
        self.assignment: list[int] | None = None

    def poll_result(self, partitions, records: list[tuple[int, int, str]]) -> None:
        assignment = sorted(partitions)
        if assignment != self.assignment:
            self.assignment = assignment
            emit({"assignment": assignment})
        if records:
            emit({"records": records})


def run_confluent(bootstrap, group, topic, assignor, session_ms, stop: threading.Event, instance_id=None) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": True, "auto.commit.interval.ms": COMMIT_INTERVAL_MS,
        "session.timeout.ms": session_ms, "heartbeat.interval.ms": max(session_ms // 10, 100),
        "partition.assignment.strategy": assignor, "topic.metadata.refresh.interval.ms": 1000,
        "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500,
        **({"group.instance.id": instance_id} if instance_id else {})})
    # Rebalance callbacks only report; confluent-kafka (incrementally) assigns/unassigns itself afterwards.
    consumer.subscribe([topic], on_assign=lambda c, ps: emit({"rebalance": "assign"}),
                       on_revoke=lambda c, ps: emit({"rebalance": "revoke"}))
    reporter = Reporter()
    while not stop.is_set():
        messages = consumer.consume(500, POLL_MS / 1000)
        records = [(m.partition(), m.offset(), m.value().decode()) for m in messages if m.error() is None]
        reporter.poll_result([tp.partition for tp in consumer.assignment()], records)
    consumer.close()


def _kafka_python_assignors(assignor: str):
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "cooperative-sticky": CooperativeStickyAssignor}[assignor]


def run_kafka_python(bootstrap, group, topic, assignor, session_ms, stop: threading.Event) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
        enable_auto_commit=True, auto_commit_interval_ms=COMMIT_INTERVAL_MS, session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(session_ms // 10, 100), metadata_max_age_ms=1000,
        partition_assignment_strategy=[_kafka_python_assignors(assignor)])
    reporter = Reporter()
    while not stop.is_set():
        batches = consumer.poll(POLL_MS)
        records = [(m.partition, m.offset, m.value.decode()) for batch in batches.values() for m in batch]
        reporter.poll_result([tp.partition for tp in consumer.assignment()], records)
    consumer.close()


def run_aiokafka(bootstrap, group, topic, assignor, session_ms, stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    strategy = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "sticky": StickyPartitionAssignor}[assignor]

    async def consume() -> None:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=True, auto_commit_interval_ms=COMMIT_INTERVAL_MS, session_timeout_ms=session_ms,
            heartbeat_interval_ms=max(session_ms // 10, 100), metadata_max_age_ms=1000,
            partition_assignment_strategy=(strategy,))
        await consumer.start()
        reporter = Reporter()
        try:
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=POLL_MS)
                records = [(m.partition, m.offset, m.value.decode()) for batch in batches.values() for m in batch]
                reporter.poll_result([tp.partition for tp in consumer.assignment()], records)
        finally:
            await consumer.stop()

    asyncio.run(consume())


RUNNERS = {"confluent-kafka": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


def main() -> None:
    client, bootstrap, group, topic, assignor, session_ms, *instance_id = sys.argv[1:]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    RUNNERS[client](bootstrap, group, topic, assignor, int(session_ms), stop, *instance_id)


if __name__ == "__main__":
    main()
