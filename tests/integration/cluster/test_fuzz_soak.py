"""The live structure-aware fuzz soak: `STROM_FUZZ_SOAK_FRAMES` (100,000 for the acceptance run) hostile
requests of every API and version (`tests.fuzz.mutations`) sent to a 3-broker cluster over many connections,
while an acks=all idempotent producer and a consumer group work beside them. A frame counts once the broker
answered it or closed the connection at it. Afterwards every broker is up, every acknowledged record is in
the log once at its offset, the replicas are byte-identical, no partition is left without a leader, the
consumer group kept consuming, and each broker's memory is back near where it started.

    STROM_FUZZ_SOAK_FRAMES=100000 .venv/bin/pytest -m slow -s tests/integration/cluster/test_fuzz_soak.py
"""

import asyncio
import os
import struct
import threading
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from brokerd.protocol.api_keys import ApiKey
from tests.fuzz.mutations import RequestMutator
from tests.integration.cluster.test_faults import TOPIC_CONFIGS, finish_and_audit, wait_for_progress
from tests.integration.cluster.workload import AckingProducer

FRAMES = int(os.environ.get("STROM_FUZZ_SOAK_FRAMES", "10000"))
"""Frames the brokers must answer or refuse. `make test` sends 10,000 (about a minute); the issue's acceptance
run is 100,000 (about 14 minutes at load 25 on 2 cores)."""
CONNECTIONS = 24
"""Connections at a time, spread over the three brokers; one closed by a broker is replaced at once."""
IN_FLIGHT = 8
"""Requests pipelined on a connection before its oldest is answered."""
HEAD_WAIT_S = 2.0
"""How long the oldest request may stay unanswered before its connection is given up (and counted parked)."""
POOL = 3_000
"""Structure-aware frames encoded by kio; every frame sent is a variant of one of them."""
RSS_GROWTH_LIMIT = 150 * 1024 * 1024
MiB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class GroupConsumer:
    """A consumer-group member reading `topic` in a thread, committing as it goes."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumed = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"soak-{uuid.uuid4().hex[:8]}",
                                   "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                   "auto.commit.interval.ms": 500})
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.consume(500, 0.2):
                if message.error() is None:
                    self.consumed += 1
                elif not message.error().retriable():
                    self.errors.append(str(message.error()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()


@dataclass
class Delivery:
    """What the brokers did with the frames: answered, or closed the connection at (the frame at the head of
    the connection's queue when it closed), per API; frames pipelined behind a closing one are not counted."""

    answered: Counter[str] = field(default_factory=Counter)
    closed_at: Counter[str] = field(default_factory=Counter)
    connections: int = 0
    parked: int = 0
    """Connections given up while their head request stayed unanswered (long polls, parked joins)."""

    @property
    def total(self) -> int:
        return sum(self.answered.values()) + sum(self.closed_at.values())


async def send_frames(ports: list[int], mutator: RequestMutator, pool: list[bytes], total: int) -> Delivery:
    """Send variants over `CONNECTIONS` connections, at most `IN_FLIGHT` unanswered on each, until the
    brokers have answered or refused `total` of them."""
    delivery = Delivery()
    next_frame = 0

    async def worker(index: int) -> None:
        nonlocal next_frame
        port = ports[index % len(ports)]
        while delivery.total < total:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            delivery.connections += 1
            queue: deque[str] = deque()
            try:
                while delivery.total < total:
                    while len(queue) < IN_FLIGHT:
                        frame = mutator.variant(pool[next_frame % len(pool)], next_frame)
                        next_frame += 1
                        queue.append(ApiKey(struct.unpack_from(">h", frame, 4)[0]).name)
                        writer.write(frame)
                    async with asyncio.timeout(HEAD_WAIT_S):
                        size = struct.unpack(">i", await reader.readexactly(4))[0]
                        await reader.readexactly(size)
                    delivery.answered[queue.popleft()] += 1
            except (asyncio.IncompleteReadError, ConnectionError):
                delivery.closed_at[queue.popleft()] += 1
            except TimeoutError:
                delivery.parked += 1
            writer.close()

    await asyncio.gather(*(worker(i) for i in range(CONNECTIONS)))
    return delivery


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_hostile_requests_leave_the_cluster_whole(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    producer = AckingProducer(cluster.bootstrap, topic_name, rate_per_s=200).start()
    wait_for_progress(producer)
    consumer = GroupConsumer(cluster.bootstrap, topic_name)
    mutator = RequestMutator(seed=19)
    pool = mutator.pool(POOL)
    rss_before = {b.broker_id: rss_bytes(b.process.pid) for b in cluster.brokers.values()}
    acked_before, consumed_before = len(producer.acks), consumer.consumed
    started = time.monotonic()
    delivery = asyncio.run(send_frames([b.port for b in cluster.brokers.values()], mutator, pool, FRAMES))
    elapsed = time.monotonic() - started
    print(f"\nfuzz soak: {delivery.total} frames answered or refused in {elapsed:.0f}s", flush=True)
    assert all(b.alive for b in cluster.brokers.values()), "a broker died under fuzzing"
    assert len(producer.acks) > acked_before and consumer.consumed > consumed_before
    rss_peak = {b.broker_id: rss_bytes(b.process.pid) for b in cluster.brokers.values()}
    finish_and_audit(cluster, producer, topic_name)
    consumer.stop()
    assert not consumer.errors, consumer.errors[:5]
    offline = [(t["name"], p["partition"]) for t in cluster.plane.metadata()["topics"] for p in t["partitions"]
               if p["leader"] < 0]
    assert not offline, offline
    rss_after = {b.broker_id: rss_bytes(b.process.pid) for b in cluster.brokers.values()}
    print(f"fuzz soak: {sum(mutator.sent.values())} frames sent, {delivery.total} answered or refused in "
          f"{elapsed:.0f}s over {delivery.connections} connections ({sum(delivery.closed_at.values())} closed by a "
          f"broker, {delivery.parked} given up while parked); answered per API "
          f"{dict(delivery.answered.most_common())}; "
          f"connection closed at, per API {dict(delivery.closed_at.most_common())}; acks=all records acknowledged "
          f"and verified {len(producer.acks)}, consumed by the group {consumer.consumed}; RSS MiB "
          "before/after-soak/after-audit "
          + ", ".join(f"broker {b}: {rss_before[b] // MiB}/{rss_peak[b] // MiB}/{rss_after[b] // MiB}"
                      for b in sorted(rss_before)))
    assert delivery.total >= FRAMES
    for broker_id, before in rss_before.items():
        assert rss_after[broker_id] - before < RSS_GROWTH_LIMIT, (broker_id, before, rss_after[broker_id])
