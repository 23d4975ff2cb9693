"""`make bench`: the client workload of issue 4 against Strom and, in the same run, its peers.

Workload: confluent-kafka produces N x 1 KiB records (linger.ms=5, batch.size=1 MiB, acks=1) into a topic
with 1 and then 8 partitions, then consumes them all from the beginning. `strom-rf3` runs the same
workload on a 3-broker Strom cluster with RF=3, acks=all and min.insync.replicas=2 (CPU and RSS summed
over the three brokers), reported beside single-broker Strom. Redis Streams gets the
equivalent: pipelined XADD (1000 per round trip) into 1 or 8 streams, then XREAD COUNT 1000.
Per phase we print MB/s, msgs/s, broker CPU-seconds per 1M records (utime+stime from /proc), broker
RSS (VmRSS after the phase) and each peer's ratio to Strom (MB/s: higher is faster; CPU: higher is
more CPU than Strom).

Each Kafka-protocol peer first produces and consumes BENCH_WARMUP_RECORDS (default 10000) on a warm-up
topic, unmeasured: a benchmark's figures are per-record costs, not what a process does once (JIT and class
loading in Kafka's JVM, the request schemas of each version in Strom). BENCH_WARMUP_RECORDS=0 measures a
cold broker.

Environment: BENCH_RECORDS (default 1000000), BENCH_PEERS (comma list, default
strom,strom-rf3,tansu,redis,kafka), BENCH_PARTITIONS (comma list of partition counts, default 1,8: one row pair
per count, e.g. 8 alone to repeat only the rows an A/B is about), KAFKA_HOME (enables Apache Kafka).
"""

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.peers import PeerUnavailable, RunningPeer
from bench.peers.kafka_protocol import apache_kafka, strom, strom_rf3, tansu
from bench.peers.redis_streams import redis_streams

RECORD_BYTES = 1024
PARTITION_COUNTS = tuple(int(n) for n in os.environ.get("BENCH_PARTITIONS", "1,8").split(","))
TIMEOUT_S = 300
WARMUP_RECORDS = int(os.environ.get("BENCH_WARMUP_RECORDS", "10000"))
CONSUMER_CONFIG = {"group.id": "bench", "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                   "fetch.queue.backoff.ms": 10}
"""The consume phase's librdkafka settings (besides `bootstrap.servers`). librdkafka stops fetching a partition
for `fetch.queue.backoff.ms` once its prefetch queue is full (`queued.max.messages.kbytes`, 64 MiB); at the
default, 1,000 ms, a broker that fills that queue faster than this Python loop empties it then sits idle for a
second each time, and the consume phase measured those pauses, not the broker (one broker, 8 partitions: 40
partition backoffs of 1 s in a 7.5 s consume of 1M records, 2.8 s without them). At 10 ms the client fetches
again as soon as its queue has room, as the Java consumer does once its buffer drains."""


@dataclass(frozen=True)
class PhaseResult:
    system: str
    phase: str
    partitions: int
    records: int
    seconds: float
    cpu_seconds: float
    rss_bytes: int

    @property
    def mb_per_s(self) -> float:
        return self.records * RECORD_BYTES / self.seconds / 1e6

    @property
    def msgs_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def cpu_per_million(self) -> float:
        return self.cpu_seconds * 1_000_000 / self.records


def measure(peer: RunningPeer, phase: str, partitions: int, records: int, run: Callable[[], None]
            ) -> PhaseResult:
    cpu_before = peer.cpu_seconds()
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    return PhaseResult(peer.name, phase, partitions, records, seconds, peer.cpu_seconds() - cpu_before,
                       peer.rss_bytes())


# --- Kafka protocol (confluent-kafka) --------------------------------------------------------------------

def kafka_phases(peer: RunningPeer, partitions: int, records: int) -> list[PhaseResult]:
    """Produce then consume `records` on a new topic of `partitions`, each phase measured; first, unmeasured,
    the same on a warm-up topic of `WARMUP_RECORDS` (what a broker does once in its life — e.g. load the
    schemas of the request versions its clients use — is not a per-record cost)."""
    if WARMUP_RECORDS:
        warmup = _kafka_topic(peer, partitions, "warmup")
        _kafka_produce(peer, warmup, WARMUP_RECORDS)
        _kafka_consume(peer, warmup, partitions, WARMUP_RECORDS)
    topic = _kafka_topic(peer, partitions, "bench")
    return [measure(peer, "produce", partitions, records, lambda: _kafka_produce(peer, topic, records)),
            measure(peer, "consume", partitions, records, lambda: _kafka_consume(peer, topic, partitions, records))]


def _kafka_topic(peer: RunningPeer, partitions: int, prefix: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"{prefix}-{partitions}-{int(time.time() * 1000)}"
    admin = AdminClient({"bootstrap.servers": peer.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, peer.replication_factor,
                                  config=dict(peer.topic_configs))])[topic].result(60)
    deadline = time.monotonic() + 60
    while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) < partitions:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{peer.name}: topic {topic} never showed {partitions} partitions")
        time.sleep(0.1)
    return topic


def _kafka_produce(peer: RunningPeer, topic: str, records: int) -> None:
    from confluent_kafka import Producer

    value = os.urandom(RECORD_BYTES)
    errors: list[object] = []
    producer = Producer({"bootstrap.servers": peer.bootstrap, "linger.ms": 5, "batch.size": 1_048_576,
                         "acks": peer.acks, "queue.buffering.max.kbytes": 1_048_576,
                         "delivery.report.only.error": True,
                         "on_delivery": lambda err, _msg: errors.append(err)})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(TIMEOUT_S):
        raise RuntimeError(f"{peer.name}: producer could not flush")
    if errors:
        raise RuntimeError(f"{peer.name}: {len(errors)} delivery errors, first {errors[0]}")


def _kafka_consume(peer: RunningPeer, topic: str, partitions: int, records: int) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": peer.bootstrap, **CONSUMER_CONFIG})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen = 0
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{peer.name}: consumed {seen} of {records}")
            for message in consumer.consume(10_000, 1.0):
                if message.error() is None:
                    seen += 1
                elif message.error().code() != -191:  # _PARTITION_EOF
                    raise RuntimeError(f"{peer.name}: {message.error()}")
    finally:
        consumer.close()


# --- Redis Streams ---------------------------------------------------------------------------------------

def redis_phases(peer: RunningPeer, partitions: int, records: int) -> list[PhaseResult]:
    import redis

    client = redis.Redis(port=peer.port)
    streams = [f"bench-{partitions}-{p}-{time.time_ns()}" for p in range(partitions)]
    value = os.urandom(RECORD_BYTES)
    per_round_trip = 1000

    def produce() -> None:
        for start in range(0, records, per_round_trip):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(start + per_round_trip, records)):
                pipe.xadd(streams[i % partitions], {"v": value})
            pipe.execute()

    def consume() -> None:
        positions = dict.fromkeys(streams, "0")
        seen = 0
        while seen < records:
            for stream, entries in client.xread(positions, count=per_round_trip):
                positions[stream.decode()] = entries[-1][0]
                seen += len(entries)

    return [measure(peer, "produce", partitions, records, produce),
            measure(peer, "consume", partitions, records, consume)]


# --- driver ----------------------------------------------------------------------------------------------

PEERS: dict[str, tuple[Callable[[], contextlib.AbstractContextManager[RunningPeer]], Callable]] = {
    "strom": (strom, kafka_phases),
    "strom-rf3": (strom_rf3, kafka_phases),
    "tansu": (tansu, kafka_phases),
    "redis": (redis_streams, redis_phases),
    "kafka": (apache_kafka, kafka_phases),
}


def run_peer(name: str, records: int) -> Iterator[PhaseResult]:
    start, phases = PEERS[name]
    for partitions in PARTITION_COUNTS:
        try:
            with start() as peer:  # a fresh broker per partition count: RSS and CPU are per workload
                yield from phases(peer, partitions, records)
        except PeerUnavailable as exc:
            print(f"  skipped {name}: {exc}", flush=True)
            return
        except Exception as exc:  # noqa: BLE001 - one failing peer must not hide the others' figures
            print(f"  {name} failed ({partitions} partitions): {exc}", flush=True)


def report(results: list[PhaseResult]) -> None:
    baseline = {(r.phase, r.partitions): r for r in results if r.system == "strom"}
    print(f"\n{'phase':<8} {'parts':>5} {'system':<7} {'MB/s':>8} {'msgs/s':>10} {'CPU-s/1M':>9} "
          f"{'RSS MB':>7} {'MB/s÷Strom':>11} {'CPU÷Strom':>10}")
    for r in sorted(results, key=lambda r: (r.phase != "produce", r.partitions, r.system != "strom")):
        base = baseline.get((r.phase, r.partitions))
        speed = f"{r.mb_per_s / base.mb_per_s:.2f}" if base else "-"
        cpu = f"{r.cpu_per_million / base.cpu_per_million:.2f}" if base and base.cpu_per_million else "-"
        print(f"{r.phase:<8} {r.partitions:>5} {r.system:<9} {r.mb_per_s:>8.1f} {r.msgs_per_s:>10,.0f} "
              f"{r.cpu_per_million:>9.2f} {r.rss_bytes / 2**20:>7.0f} {speed:>11} {cpu:>10}")
    print("\nIssue-4 target (Apache Kafka 3.9 here): produce ~220 MB/s at ~4 CPU-s/1M, "
          "consume ~330 MB/s at ~0.8 CPU-s/1M, RSS ~620 MB.")


def main() -> int:
    records = int(os.environ.get("BENCH_RECORDS", "1000000"))
    names = [n.strip() for n in os.environ.get("BENCH_PEERS", ",".join(PEERS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        print(f"bench: unknown peers {unknown}; choose from {list(PEERS)}", file=sys.stderr)
        return 2
    results: list[PhaseResult] = []
    for name in names:
        print(f"{name}: {records:,} x {RECORD_BYTES} B records, partitions {PARTITION_COUNTS}", flush=True)
        results.extend(run_peer(name, records))
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
