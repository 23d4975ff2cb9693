"""The live structure-aware fuzz soak: ≥ 100,000 hostile requests of every API and version
(`tests.fuzz.mutations`) sent to a 3-broker cluster over many connections, while an acks=all idempotent
producer and a consumer group work beside them. Afterwards every broker is up, every acknowledged record is in
the log once at its offset, the replicas are byte-identical, no partition is left without a leader, the
consumer group kept consuming, and each broker's memory is back near where it started.

    STROM_FUZZ_SOAK_FRAMES=100000 .venv/bin/pytest -m slow -s tests/integration/cluster/test_fuzz_soak.py
"""

import asyncio
import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from tests.fuzz.mutations import RequestMutator
from tests.integration.cluster.test_faults import TOPIC_CONFIGS, finish_and_audit, wait_for_progress
from tests.integration.cluster.workload import AckingProducer

FRAMES = int(os.environ.get("STROM_FUZZ_SOAK_FRAMES", "100000"))
CONNECTIONS = 24
"""Connections at a time, spread over the three brokers; one closed by a broker is replaced at once."""
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


async def send_frames(ports: list[int], mutator: RequestMutator, pool: list[bytes], total: int) -> dict[str, int]:
    """Send `total` variants over `CONNECTIONS` connections, draining (and discarding) responses; returns
    counts of connections opened and closed by the brokers."""
    stats = {"connections": 0, "closed_by_broker": 0}
    sent = 0

    async def drain(reader: asyncio.StreamReader) -> None:
        while await reader.read(1 << 16):
            pass

    async def worker(index: int) -> None:
        nonlocal sent
        port = ports[index % len(ports)]
        while sent < total:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            stats["connections"] += 1
            drainer = asyncio.ensure_future(drain(reader))
            try:
                for _ in range(200):  # a fresh connection now and then: pipelines of hostile frames
                    if sent >= total or drainer.done():
                        break
                    writer.write(mutator.variant(pool[sent % len(pool)], sent))
                    sent += 1
                    async with asyncio.timeout(10):
                        await writer.drain()
            except (ConnectionError, TimeoutError):
                pass
            if drainer.done():
                stats["closed_by_broker"] += 1
            writer.close()
            drainer.cancel()

    await asyncio.gather(*(worker(i) for i in range(CONNECTIONS)))
    return stats


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
    stats = asyncio.run(send_frames([b.port for b in cluster.brokers.values()], mutator, pool, FRAMES))
    elapsed = time.monotonic() - started
    print(f"\nfuzz soak: {sum(mutator.sent.values())} frames sent in {elapsed:.0f}s", flush=True)
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
    print(f"\nfuzz soak: {sum(mutator.sent.values())} frames in {elapsed:.0f}s over {stats['connections']} "
          f"connections ({stats['closed_by_broker']} closed by a broker); per API {dict(mutator.sent.most_common())}; "
          f"acks=all records acknowledged and verified {len(producer.acks)}, consumed by the group "
          f"{consumer.consumed}; RSS MiB before/after-soak/after-audit "
          + ", ".join(f"broker {b}: {rss_before[b] // MiB}/{rss_peak[b] // MiB}/{rss_after[b] // MiB}"
                      for b in sorted(rss_before)))
    assert sum(mutator.sent.values()) >= FRAMES
    for broker_id, before in rss_before.items():
        assert rss_after[broker_id] - before < RSS_GROWTH_LIMIT, (broker_id, before, rss_after[broker_id])
