"""The fault tests' workload and checks: an idempotent acks=all producer that remembers every
acknowledgement, and the end-of-test audit (every acknowledged record exactly once at its offset, in
order; replicas byte-identical up to the high watermark)."""

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from brokerd.records.batch import iter_batches
from tests.support.cluster import Cluster
from tests.support.polling import wait_until

MAX_OUTSTANDING = 500


@dataclass
class Ack:
    value: int
    offset: int | None
    """None when librdkafka acknowledges without an offset: an idempotent batch whose response was lost is
    acknowledged implicitly once a later batch of the same producer is (`rd_kafka_dr_implicit_ack`)."""
    at: float
    """time.monotonic() of the delivery report."""


def end_of_acknowledged(acks: list[Ack]) -> int:
    """One past the highest acknowledged offset: a high watermark at or above it covers every acknowledged
    record, those acknowledged without an offset included (a later batch's acknowledgement implied them)."""
    return max(a.offset for a in acks if a.offset is not None) + 1


@dataclass
class AckingProducer:
    """Produces "0", "1", … to one partition of `topic` from a thread; `acks` grows in delivery order."""

    bootstrap: str
    topic: str
    partition: int = 0
    acks: list[Ack] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    sent: int = 0
    rate_per_s: float | None = None
    """Records per second (steady load); None produces as fast as acknowledgements allow."""

    def start(self) -> "AckingProducer":
        self._thread = threading.Thread(target=self._run, name="acking-producer", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        # librdkafka's defaults for everything that decides how fast a leader change is noticed (metadata
        # refresh, retry and reconnect backoffs); the message timeout only bounds a stuck test.
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 120_000})

        def delivered(err, message) -> None:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acks.append(Ack(int(message.value()), message.offset(), time.monotonic()))

        value = 0
        started = time.monotonic()
        while not self._stop.is_set():
            ahead_s = (value / self.rate_per_s - (time.monotonic() - started)) if self.rate_per_s else 0.0
            if ahead_s > 0:
                producer.poll(min(ahead_s, 0.05))  # pacing the load: serve delivery reports meanwhile
            elif value - len(self.acks) - len(self.errors) < MAX_OUTSTANDING:
                producer.produce(self.topic, str(value).encode(), partition=self.partition, on_delivery=delivered)
                value += 1
                self.sent = value
                producer.poll(0)
            else:
                producer.poll(0.005)
        remaining = producer.flush(120)
        if remaining:
            self.errors.append(f"{remaining} records never delivered")

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(180)

    def wait_for_ack_after(self, at: float, timeout_s: float = 60.0) -> float:
        """Seconds from `at` to the first acknowledgement received after it."""
        wait_until(lambda: self.acks and self.acks[-1].at > at, timeout_s, interval_s=0.005,
                   message="an acknowledgement after the fault")
        first = next(a for a in self.acks if a.at > at)
        return first.at - at


def consume_all(bootstrap: str, topic: str, end_offset: int, partition: int = 0) -> list[tuple[int, int]]:
    """(offset, value) of every record of `partition` below `end_offset`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    records: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    try:
        while (not records or records[-1][0] < end_offset - 1) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    records.append((message.offset(), int(message.value())))
    finally:
        consumer.close()
    return records


def audit_acknowledged(acks: list[Ack], records: list[tuple[int, int]]) -> None:
    """Every acknowledged value exactly once, at its acknowledged offset when it has one, in value order."""
    by_offset = dict(records)
    assert len(by_offset) == len(records), "an offset appears twice in the log"
    offsets_of_value: dict[int, list[int]] = {}
    for offset, value in records:
        offsets_of_value.setdefault(value, []).append(offset)
    for ack in acks:
        assert len(offsets_of_value.get(ack.value, [])) == 1, (
            f"acknowledged value {ack.value} at offsets {offsets_of_value.get(ack.value, [])}")
        if ack.offset is not None:
            assert offsets_of_value[ack.value] == [ack.offset], (
                f"acknowledged value {ack.value} at offset {ack.offset}, log has it at {offsets_of_value[ack.value]}")
    in_log_order = sorted(acks, key=lambda a: offsets_of_value[a.value][0])
    assert [a.value for a in in_log_order] == sorted(a.value for a in acks), "acknowledged records out of order"


def replica_bytes(log_dir: Path, topic: str, high_watermark: int, partition: int = 0) -> bytes:
    """The stored batches of a partition below the high watermark, concatenated across segments."""
    data = b"".join(p.read_bytes() for p in sorted((log_dir / f"{topic}-{partition}").glob("*.log")))
    end = 0
    for position, header in iter_batches(memoryview(data)):
        if header.next_offset > high_watermark:
            break
        end = position + header.size
    return data[:end]


def assert_replicas_identical(cluster: Cluster, topic: str, high_watermark: int) -> None:
    copies = {b.broker_id: replica_bytes(b.log_dir, topic, high_watermark) for b in cluster.brokers.values()}
    sizes = {k: len(v) for k, v in copies.items()}
    first = next(iter(copies.values()))
    assert first, "no data below the high watermark"
    assert all(copy == first for copy in copies.values()), f"replicas differ below HW {high_watermark}: {sizes}"
