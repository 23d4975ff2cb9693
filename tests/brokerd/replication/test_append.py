"""`ReplicaManager.append_records`, the one append call produce and the group coordinator use: each outcome of
Kafka's `appendRecords` as a table row, over a real replica manager, partitions and logs, with the metadata
layer scripted (leadership, ISR and min.insync.replicas are what the test sets).

A row: broker 1 leads `t-0` (replicas 1, 2, 3) with the row's ISR and `min.insync.replicas`; the row's batches
are appended with its acks; while an acks=all append waits, `while_waiting` plays what happens meanwhile
(followers fetch, the control plane shrinks the ISR or moves the leader, nothing). Expected: per batch its
offsets or the Kafka error its outcome carries, and the log end offset after the call (what was appended)."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from brokerd.clock import ManualClock
from brokerd.errors import BrokerError
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.protocol.fetch_request import FetchPosition
from brokerd.replication.partition import AppendResult
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager
from brokerd.types import TopicPartition
from tests.brokerd.groups.stack import ScriptedMetadata
from tests.brokerd.replication.conftest import build_batch

TOPIC = "t"
BROKERS = tuple(BrokerEndpoint(node, "127.0.0.1", 1) for node in (1, 2, 3))  # nothing listens: fetchers retry


def image(isr=(1, 2, 3), leader: int = 1, epoch: int = 0, partition_epoch: int = 0, min_isr: int = 1) -> ClusterImage:
    partition = PartitionAssignment(0, leader, epoch, (1, 2, 3), tuple(isr), partition_epoch)
    topic = TopicMetadata(TOPIC, "00000000-0000-0000-0000-0000000000a1", (partition,),
                          {"min.insync.replicas": str(min_isr)})
    return ClusterImage("cluster", 1, BROKERS, {TOPIC: topic})


@dataclass
class Broker:
    metadata: ScriptedMetadata
    replicas: ReplicaManager

    def followers_fetch(self, offset: int, followers=(2, 3)) -> None:
        partition = self.replicas.leader_partition(TOPIC, 0)
        for follower in followers:
            self.replicas.record_follower_fetch(partition, follower, offset)


def nothing(broker: Broker) -> None:
    """No follower fetches: the high watermark stays where it is."""


def followers_catch_up(broker: Broker) -> None:
    broker.followers_fetch(broker.replicas.leader_partition(TOPIC, 0).log_end_offset)


def isr_shrinks_to_the_leader(broker: Broker) -> None:
    """The control plane commits ISR [1] (the leader alone then moves the HW to its log end)."""
    broker.metadata.set_image(image(isr=(1,), partition_epoch=1, min_isr=2))


def leadership_moves(broker: Broker) -> None:
    broker.metadata.set_image(image(leader=2, epoch=1, partition_epoch=1))


def reassigned_away(broker: Broker) -> None:
    """A reassignment completes onto brokers 2, 3, 4: broker 1 no longer hosts t-0 and deletes it."""
    partition = PartitionAssignment(0, 2, 1, (2, 3, 4), (2, 3), 2)
    topic = TopicMetadata(TOPIC, "00000000-0000-0000-0000-0000000000a1", (partition,), {})
    broker.metadata.set_image(ClusterImage("cluster", 1, BROKERS, {TOPIC: topic}))


def topic_deleted(broker: Broker) -> None:
    broker.metadata.set_image(ClusterImage("cluster", 1, BROKERS, {}))


def idempotent(sequence: int, epoch: int = 0) -> bytearray:
    return build_batch(2, producer_id=7, producer_epoch=epoch, base_sequence=sequence)


@dataclass(frozen=True)
class Row:
    name: str
    acks: int
    batches: tuple[Callable[[], bytearray], ...]
    expected: tuple[tuple[int, int] | str, ...]
    """Per batch: (base offset, last offset), or the Kafka error name of its outcome."""
    log_end_offset: int
    isr: tuple[int, ...] = (1, 2, 3)
    min_isr: int = 1
    while_waiting: Callable[[Broker], None] = nothing
    timeout_ms: int = 5_000
    topic: str = TOPIC
    leader_epoch: int | None = None


ONE = (lambda: build_batch(2),)
ROWS = [
    Row("acks=0 answers after the local append", 0, ONE, ((0, 1),), 2),
    Row("acks=1 answers after the local append, before any follower has it", 1, ONE, ((0, 1),), 2),
    Row("acks=all with the leader the only ISR member is immediate", -1, ONE, ((0, 1),), 2, isr=(1,)),
    Row("acks=all completes once the ISR followers fetched past the batch", -1, ONE, ((0, 1),), 2,
        while_waiting=followers_catch_up),
    Row("acks=all below min.insync.replicas is refused and nothing appended", -1, ONE, ("NOT_ENOUGH_REPLICAS",), 0,
        isr=(1, 2), min_isr=3),
    Row("acks=1 ignores min.insync.replicas", 1, ONE, ((0, 1),), 2, isr=(1,), min_isr=3),
    Row("acks=all whose ISR shrank below the minimum while it waited", -1, ONE,
        ("NOT_ENOUGH_REPLICAS_AFTER_APPEND",), 2, isr=(1, 2), min_isr=2, while_waiting=isr_shrinks_to_the_leader),
    Row("acks=all not replicated within the timeout: appended, answered REQUEST_TIMED_OUT", -1, ONE,
        ("REQUEST_TIMED_OUT",), 2, timeout_ms=50),
    Row("acks=all whose leadership moved while it waited", -1, ONE, ("NOT_LEADER_OR_FOLLOWER",), 2,
        while_waiting=leadership_moves),
    # answered at once, not at the request's timeout (a client would wait that long before retrying elsewhere)
    Row("acks=all whose replica was reassigned away from this broker while it waited", -1, ONE,
        ("NOT_LEADER_OR_FOLLOWER",), 2, while_waiting=reassigned_away, timeout_ms=60_000),
    Row("acks=all whose topic was deleted while it waited", -1, ONE, ("NOT_LEADER_OR_FOLLOWER",), 2,
        while_waiting=topic_deleted, timeout_ms=60_000),
    Row("a partition this broker does not hold", 1, ONE, ("UNKNOWN_TOPIC_OR_PARTITION",), 0, topic="other"),
    Row("a write for a leadership that is over (the coordinator's leader epoch)", -1, ONE,
        ("NOT_LEADER_OR_FOLLOWER",), 0, leader_epoch=3),
    Row("a duplicate idempotent batch gets its original offsets and is not appended again", 1,
        (lambda: idempotent(0), lambda: idempotent(2), lambda: idempotent(0)), ((0, 1), (2, 3), (0, 1)), 4),
    Row("an idempotent batch that skips sequences", 1, (lambda: idempotent(0), lambda: idempotent(4)),
        ((0, 1), "OUT_OF_ORDER_SEQUENCE_NUMBER"), 2),
    Row("a batch from a fenced producer epoch", 1, (lambda: idempotent(0, epoch=1), lambda: idempotent(2, epoch=0)),
        ((0, 1), "INVALID_PRODUCER_EPOCH"), 2),
    Row("two batches in one entry break the one-batch rule", 1, (lambda: build_batch(1) + build_batch(1),),
        ("INVALID_RECORD",), 0),
    Row("a torn batch", 1, (lambda: build_batch(2)[:-3],), ("CORRUPT_MESSAGE",), 0),
    Row("one bad entry does not spoil the others of the request", -1,
        (lambda: build_batch(1), lambda: build_batch(1)[:-1], lambda: build_batch(2)),
        ((0, 0), "CORRUPT_MESSAGE", (1, 2)), 3, while_waiting=followers_catch_up),
]


def outcome_of(outcome: AppendResult | BrokerError) -> tuple[int, int] | str:
    if isinstance(outcome, AppendResult):
        return outcome.base_offset, outcome.last_offset
    assert isinstance(outcome, BrokerError), outcome
    return outcome.kafka_error


async def until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.001)


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_append_outcomes(tmp_path, row: Row):
    async def scenario():
        logs = LogManager([tmp_path / "logs"], {}, ManualClock())
        logs.startup()
        metadata = ScriptedMetadata(image(isr=row.isr, min_isr=row.min_isr))
        replicas = ReplicaManager(logs, metadata, node_id=1, clock=ManualClock())
        replicas.start()
        broker = Broker(metadata, replicas)
        partition = replicas.leader_partition(TOPIC, 0)
        try:
            entries = [(row.topic, 0, make()) for make in row.batches]
            call = asyncio.ensure_future(replicas.append_records(entries, row.acks, row.timeout_ms, row.leader_epoch))
            await until(lambda: call.done() or partition.log_end_offset == row.log_end_offset)
            row.while_waiting(broker)
            outcomes = await call
            assert [outcome_of(o) for o in outcomes] == list(row.expected)
            assert partition.log_end_offset == row.log_end_offset
        finally:
            await replicas.stop()
            logs.shutdown()

    asyncio.run(scenario())


def test_the_single_append_returns_its_result_or_raises_its_error(tmp_path):
    async def scenario():
        logs = LogManager([tmp_path / "logs"], {}, ManualClock())
        logs.startup()
        replicas = ReplicaManager(logs, ScriptedMetadata(image(isr=(1,))), node_id=1, clock=ManualClock())
        replicas.start()
        try:
            result = await replicas.append(TOPIC, 0, build_batch(3), -1, 1_000, leader_epoch=0)
            assert (result.base_offset, result.last_offset, result.leader_epoch) == (0, 2, 0)
            with pytest.raises(BrokerError) as refused:
                await replicas.append(TOPIC, 0, build_batch(1), -1, 1_000, leader_epoch=1)
            assert refused.value.kafka_error == "NOT_LEADER_OR_FOLLOWER"
        finally:
            await replicas.stop()
            logs.shutdown()

    asyncio.run(scenario())


def test_the_high_watermark_move_answers_the_produce_and_leaves_a_waiting_follower_session_asleep(tmp_path):
    """A follower reads to the log end, so a new high watermark is news for its next answer, not a reason to wake
    its waiting fetch (which would read again and go back to waiting); an append does wake it."""
    async def scenario():
        logs = LogManager([tmp_path / "logs"], {}, ManualClock())
        logs.startup()
        metadata = ScriptedMetadata(image())
        replicas = ReplicaManager(logs, metadata, node_id=1, clock=ManualClock())
        replicas.start()
        broker = Broker(metadata, replicas)
        key = TopicPartition(TOPIC, 0)
        try:
            session = replicas.fetch_sessions.create(2)
            assert session is not None
            session.update([(TOPIC, [FetchPosition(0, 0, 0, 0, 1_048_576)])], ())
            session.changed.clear()

            session.watch()
            call = asyncio.ensure_future(replicas.append_records([(TOPIC, 0, build_batch(2))], -1, 5_000))
            assert await session.wait_for_change(5)  # the append woke the follower's fetch

            session.watch()
            session.changed.clear()
            broker.followers_fetch(2)  # both followers at the log end: the high watermark moves to 2
            [outcome] = await call
            assert outcome_of(outcome) == (0, 1)
            assert key in session.changed  # the new high watermark goes with the next answer
            assert not await session.wait_for_change(0.05)
        finally:
            await replicas.stop()
            logs.shutdown()

    asyncio.run(scenario())
