"""`BENCH_METADATA_MODE=cluster make bench-metadata`: metadata at scale end to end, on a real cluster.

Per size (`BENCH_METADATA_CLUSTER_SIZES`, partitions; default 1,000 and 10,000) a fresh cluster as the
integration tests start it (`tests.support`: gunicorn + `run_controller` on SQLite, 3 `python -m brokerd`
processes on 127.0.0.1); topics of 10 partitions, RF 3, leaders spread evenly, written into the control plane's
database in transactions of at most 10,000 partitions, each one metadata change (as `bench.metadata` does:
creating 100,000 partitions through CreateTopics would take this machine longer than the rest). Brokers host
empty logs. Measured:

- **replicas hosted**: from the first change until every broker hosts every replica (its log created: a
  `<topic>-<p>` directory in its log dir), and each process's RSS then (the control plane's web process —
  gunicorn master and worker — and controller, each broker); a broker's RSS per partition is the slope between
  two sizes;
- **idle brokers**: each broker's CPU over 5 s with nothing produced (idle replication);
- **one leader change** (`BENCH_METADATA_CHANGES`, 50): a transaction moving partition 0 of one topic to
  another in-sync replica (`bench.metadata.swing_one_leader`), then from its commit until each of the 3
  brokers answers a Metadata request with the new leader (each broker polled on its own connection): p50 and
  p99 of the slowest broker; bytes of the delta each broker long-polls (`/metadata/changes?since=`, built once
  and served to all); control-plane CPU per change (this process's transaction plus the web and controller
  processes' CPU over the changes, minus their idle rate measured just before);
- **broker failure**: SIGKILL of broker 1 (it leads a third of the partitions); until every broker still
  alive answers Metadata with a new leader for a partition it led (the failover is one metadata change,
  applied by a broker at once, so the first such answer means all of them; checked over every partition with
  one full Metadata request afterwards), and until an acks=all producer (confluent-kafka, librdkafka
  defaults) has every one of one record per partition of a sample (`BENCH_METADATA_SAMPLE`, 20 partitions
  broker 1 led) acknowledged;
- **restart**: the killed broker started again (after SIGKILL: every log recovered) until it serves.

For a diagnosis: `BENCH_METADATA_DIR=<dir>` keeps each size's cluster under `<dir>/<size>` (the web, controller
and broker logs; delete the brokers' log dirs afterwards: at 100,000 partitions 300,000 log directories of 4
inodes and ~12 KiB each, ~1.2 M inodes and ~3.6 GB), `BENCH_METADATA_SLOW_CALLBACK_MS=500` has every broker log
the event-loop callbacks that held its loop that long (`strom.loop.slow.callback.ms`); the control plane's
settings come from the environment (e.g. `STROM_BROKER_SESSION_TIMEOUT_MS`, passed on by
`tests.support.controlplane`).

References printed beside the figures: Kafka 3.9 KRaft (the issue: a broker failure at this scale re-elects
in seconds, its 3.9 defaults detect a dead broker after 9 s — 13.2 s from kill to acknowledged on one
partition as measured by this project's fault test) and the issue's targets.
"""

import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SIZES = [int(n) for n in os.environ.get("BENCH_METADATA_CLUSTER_SIZES", "1000,10000").split(",")]
CHANGES = int(os.environ.get("BENCH_METADATA_CHANGES", "50"))
SAMPLE = int(os.environ.get("BENCH_METADATA_SAMPLE", "20"))
CHUNK_PARTITIONS = 10_000
"""Partitions written per transaction (one metadata change each) while a size is set up."""
HOSTED_TIMEOUT_S = float(os.environ.get("BENCH_METADATA_HOSTED_TIMEOUT_S", "900"))
VICTIM = 1
BROKER_OVERRIDES = {"strom.metrics.topic.enable": "false", "replica.lag.time.max.ms": "600000"}
"""No `__strom_metrics` topic: the cluster holds exactly the bench's partitions. A lag limit of 10 min instead of
30 s: on this shared machine a broker may create its 10,000 logs a minute after another, and the ISR shrinks and
expands that would follow (one AlterPartition per partition) are not what this bench measures."""
if os.environ.get("BENCH_METADATA_SLOW_CALLBACK_MS"):  # each broker logs event-loop callbacks held that long
    BROKER_OVERRIDES["strom.loop.slow.callback.ms"] = os.environ["BENCH_METADATA_SLOW_CALLBACK_MS"]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
POLL_INTERVAL_S = 0.002
"""Between two rounds of Metadata requests to the brokers (the measurement's resolution; polling flat out
would take the CPU the brokers need)."""


# --- processes -----------------------------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(c) for c in f.read().split()]
    return []


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of `pids` so far."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def control_plane_pids(plane) -> dict[str, list[int]]:
    return {"web": [plane.web.pid, *children(plane.web.pid)], "controller": [plane.controller.pid]}


# --- a broker's view, over the Kafka protocol ----------------------------------------------------------


class MetadataProbe:
    """One connection to one broker, asking Metadata v4 (the broker's image, as clients see it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._sock: socket.socket | None = None
        self._correlation = 0

    def leaders(self, topics: list[str] | None) -> dict[tuple[str, int], int]:
        """(topic, partition) -> leader id, for `topics` (None: every topic)."""
        from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
        from kio.schema.types import TopicName

        from brokerd.protocol.api_keys import ApiKey
        from tests.support.kafka_wire import decode_response, encode_request, read_frame

        if self._sock is None:
            self._sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        self._correlation += 1
        request = MetadataRequest(topics=None if topics is None else tuple(
            MetadataRequestTopic(name=TopicName(t)) for t in topics), allow_auto_topic_creation=False)
        self._sock.sendall(encode_request(ApiKey.METADATA, 4, self._correlation, request))
        _, response = decode_response(ApiKey.METADATA, 4, read_frame(self._sock))
        return {(t.name, p.partition_index): p.leader_id for t in response.topics for p in t.partitions}

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.0):
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
        if interval_s:
            time.sleep(interval_s)


def hosted_replicas(log_dir: Path) -> int:
    return sum(1 for entry in os.scandir(log_dir) if entry.is_dir() and not entry.name.endswith("-delete"))


# --- the control plane's side --------------------------------------------------------------------------


def delta_bytes(plane, since: int) -> int:
    request = urllib.request.Request(f"{plane.url}/internal/v1/metadata/changes?since={since}",
                                     headers={"Authorization": f"Bearer {plane.secret}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return len(response.read())


def leader_counts() -> dict[int, int]:
    from controlplane.topics.models import Partition

    return {b: Partition.objects.filter(leader=b).count() for b in (1, 2, 3)}


def settle(brokers) -> None:
    """Wait until every broker runs and every ISR is full, then elect the preferred leaders (each broker leads
    a third again, whatever a slow setup moved)."""
    from django.db import connection
    from django.db.models import F

    from controlplane.cluster.models import Broker, BrokerState
    from controlplane.controller.election import elect_leaders
    from controlplane.topics.models import Partition

    def settled() -> bool:
        try:
            return (Broker.objects.filter(state=BrokerState.RUNNING).count() == len(brokers)
                    and not Partition.objects.exclude(isr=F("replicas")).exists())
        finally:
            connection.close()

    wait_for(settled, HOSTED_TIMEOUT_S, "every broker running and every ISR full", interval_s=1)
    elect_leaders("preferred", None)
    connection.close()


# --- one size ------------------------------------------------------------------------------------------


def measure(size: int, directory: Path, figures: dict) -> None:
    """Fill `figures` for `size` partitions (what was measured stays in it if a later step fails)."""
    from bench.metadata import setup_django
    from tests.support.cluster import broker_cluster
    from tests.support.controlplane import control_plane

    figures["partitions"] = size
    with control_plane(directory) as plane, broker_cluster(plane, directory, 3, overrides=BROKER_OVERRIDES) as cluster:
        setup_django(str(plane.var_dir))
        probes = {b: MetadataProbe(broker.port) for b, broker in cluster.brokers.items()}
        try:
            host(size, cluster, probes, figures)
            print(f"{size}: every broker hosts {size} replicas after {figures['hosted_s']:.1f} s", file=sys.stderr,
                  flush=True)
            leader_changes(size, plane, probes, figures, [b.process.pid for b in cluster.brokers.values()])
            print(f"{size}: {CHANGES} leader changes measured", file=sys.stderr, flush=True)
            failover(cluster, probes, figures)
            print(f"{size}: failover measured", file=sys.stderr, flush=True)
            restart = time.perf_counter()
            cluster.start(VICTIM, timeout_s=HOSTED_TIMEOUT_S)
            figures["restart_s"] = time.perf_counter() - restart
        finally:
            for probe in probes.values():
                probe.close()


def host(size: int, cluster, probes: dict[int, MetadataProbe], figures: dict) -> None:
    """Write the topics; until every broker hosts every replica and serves the last topic; the settled
    cluster's RSS."""
    from django.db import connection

    from bench.metadata import PARTITIONS_PER_TOPIC, grow_to

    started = time.perf_counter()
    for target in range(min(CHUNK_PARTITIONS, size), size + 1, CHUNK_PARTITIONS):
        grow_to(target)
    connection.close()  # SQLite: no read snapshot held open while the others write
    brokers = cluster.brokers
    wait_for(lambda: all(hosted_replicas(b.log_dir) >= size for b in brokers.values()), HOSTED_TIMEOUT_S,
             "every broker hosting every replica", interval_s=0.2)
    last_topic = f"t{size // PARTITIONS_PER_TOPIC - 1:06d}"
    wait_for(lambda: all(len(p.leaders([last_topic])) == PARTITIONS_PER_TOPIC for p in probes.values()), 120,
             "every broker serving the last topic", interval_s=0.1)
    figures["hosted_s"] = time.perf_counter() - started
    settle(brokers)
    figures.update({f"rss_broker{b}_mib": rss_mib(broker.process.pid) for b, broker in brokers.items()})
    pids = control_plane_pids(cluster.plane)
    figures["rss_web_mib"] = sum(rss_mib(pid) for pid in pids["web"])
    figures["rss_controller_mib"] = rss_mib(pids["controller"][0])


def leader_changes(size: int, plane, probes: dict[int, MetadataProbe], figures: dict, broker_pids: list[int]) -> None:
    """CHANGES single leader changes: until all brokers answer the new leader, delta bytes, control-plane CPU;
    before them, the idle brokers' CPU (idle replication: every follower's fetches of empty partitions)."""
    from django.db import connection

    from bench.metadata import PARTITIONS_PER_TOPIC, swing_one_leader
    from controlplane.cluster import metadata
    from controlplane.topics.models import Partition

    pids = control_plane_pids(plane)
    plane_pids = pids["web"] + pids["controller"]
    idle_wall, idle_cpu, idle_brokers_cpu = time.perf_counter(), cpu_s(plane_pids), cpu_s(broker_pids)
    time.sleep(5)
    idle_s = time.perf_counter() - idle_wall
    idle_rate = (cpu_s(plane_pids) - idle_cpu) / idle_s
    figures["broker_idle_cpu_pct"] = (cpu_s(broker_pids) - idle_brokers_cpu) / idle_s / len(broker_pids) * 100
    latencies, sizes, own_cpu = [], [], 0.0
    wall0, cpu0 = time.perf_counter(), cpu_s(plane_pids)
    for r in range(CHANGES):
        topic = f"t{r % (size // PARTITIONS_PER_TOPIC):06d}"
        since = metadata.current_version()
        cpu_before = time.process_time()
        swing_one_leader(topic)
        committed = time.perf_counter()
        own_cpu += time.process_time() - cpu_before
        target = Partition.objects.get(topic__name=topic, partition=0).leader
        connection.close()
        seen = {}
        while len(seen) < len(probes):
            for b, probe in probes.items():
                if b not in seen and probe.leaders([topic]).get((topic, 0)) == target:
                    seen[b] = time.perf_counter() - committed
            time.sleep(POLL_INTERVAL_S)
        latencies.append(max(seen.values()) * 1000)
        sizes.append(delta_bytes(plane, since))
    changes_wall, changes_cpu = time.perf_counter() - wall0, cpu_s(plane_pids) - cpu0
    figures["change_p50_ms"] = statistics.median(latencies)
    figures["change_p99_ms"] = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else latencies[0]
    figures["change_bytes"] = statistics.median(sizes)
    figures["change_cpu_ms"] = (own_cpu + max(changes_cpu - idle_rate * changes_wall, 0)) / CHANGES * 1000


def failover(cluster, probes: dict[int, MetadataProbe], figures: dict) -> None:
    """SIGKILL of VICTIM (leading a third): until both survivors answer new leaders, and until an acks=all
    producer has a record on each sampled partition acknowledged; then every partition checked."""
    from django.db import connection

    settle(cluster.brokers)
    figures["failover_leaderships"] = leader_counts()[VICTIM]
    connection.close()
    before = probes[2].leaders(None)
    led = sorted(tp for tp, leader in before.items() if leader == VICTIM)
    sample = led[:: max(len(led) // SAMPLE, 1)][:SAMPLE]
    probe_tp = led[0]
    producer = warm_producer(cluster.bootstrap, sample)
    survivors = {b: p for b, p in probes.items() if b != VICTIM}
    probes[VICTIM].close()
    acked: dict[tuple[str, int], float] = {}
    killed = time.perf_counter()
    cluster.kill(VICTIM)
    for topic, partition in sample:
        producer.produce(topic, b"after", partition=partition,
                         on_delivery=lambda err, msg, tp=(topic, partition): err is None and acked.setdefault(
                             tp, time.perf_counter() - killed))
    image_s = {}
    while len(image_s) < len(survivors) or len(acked) < len(sample):
        producer.poll(POLL_INTERVAL_S)
        for b, probe in survivors.items():
            if b not in image_s and probe.leaders([probe_tp[0]]).get(probe_tp) not in (VICTIM, None, -1):
                image_s[b] = time.perf_counter() - killed
        if time.perf_counter() - killed > 300:
            raise TimeoutError(f"failover: images {image_s}, acknowledged {len(acked)} of {len(sample)}")
    figures["failover_image_s"] = max(image_s.values())
    figures["failover_acked_s"] = max(acked.values())
    producer.flush(10)
    del producer  # before its brokers go: librdkafka would keep reconnecting
    for b, probe in survivors.items():
        after = probe.leaders(None)
        stale = [tp for tp in led if after.get(tp) in (VICTIM, None, -1)]
        assert not stale, f"broker {b} still has no new leader for {len(stale)} partitions, e.g. {stale[:3]}"


def warm_producer(bootstrap: str, sample: list[tuple[str, int]]):
    """An acks=all producer that has written to every sampled partition (connections and metadata warm)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 300_000, "log_level": 0})  # the killed broker's refusals
    for topic, partition in sample:
        producer.produce(topic, b"before", partition=partition)
    if producer.flush(60):
        raise TimeoutError("the warm-up records were not acknowledged")
    return producer


ROWS = [
    ("partitions (RF 3, every broker hosts every one)", "partitions", "{:,.0f}", "", ""),
    ("every replica hosted after the topics' changes, s", "hosted_s", "{:.1f}", "", ""),
    ("one leader change: to all 3 brokers' Metadata, p50 ms", "change_p50_ms", "{:.1f}", "", ""),
    ("one leader change: to all 3 brokers' Metadata, p99 ms", "change_p99_ms", "{:.1f}", "", "<= 100 at 100k"),
    ("one leader change: delta bytes per broker", "change_bytes", "{:,.0f}", "", "<= 10 KB at 100k"),
    ("one leader change: control-plane CPU ms", "change_cpu_ms", "{:.1f}", "", ""),
    ("idle brokers (empty logs, ISRs full): CPU % of a core, mean of 3", "broker_idle_cpu_pct", "{:.1f}", "", ""),
    ("broker failure: leaderships moved", "failover_leaderships", "{:,.0f}", "", ""),
    ("broker failure: SIGKILL -> new leaders in every live broker's Metadata, s", "failover_image_s", "{:.2f}",
     "~9 (3.9 defaults: 9 s session)", "<= 5 at 100k"),
    ("broker failure: SIGKILL -> acks=all producer acknowledged on the sample, s", "failover_acked_s", "{:.2f}",
     "13.2 (one partition)", ""),
    ("restart of the killed broker (recovers every log) until it serves, s", "restart_s", "{:.1f}", "", ""),
    ("RSS MiB: control plane web (gunicorn master + worker)", "rss_web_mib", "{:.0f}", "", ""),
    ("RSS MiB: controller", "rss_controller_mib", "{:.0f}", "", ""),
    ("RSS MiB: broker 1", "rss_broker1_mib", "{:.0f}", "", ""),
    ("RSS MiB: broker 2", "rss_broker2_mib", "{:.0f}", "", ""),
    ("RSS MiB: broker 3", "rss_broker3_mib", "{:.0f}", "", ""),
]


@contextlib.contextmanager
def run_directory(size: int):
    """Where a size's cluster lives: a temporary directory, or `$BENCH_METADATA_DIR/<size>` kept afterwards (its
    processes' logs, for a diagnosis; the brokers' log dirs hold 3 x size partition directories)."""
    keep = os.environ.get("BENCH_METADATA_DIR")
    if not keep:
        with tempfile.TemporaryDirectory(prefix="strom-bench-metadata-cluster-") as directory:
            yield Path(directory)
        return
    directory = Path(keep) / str(size)
    directory.mkdir(parents=True, exist_ok=False)
    yield directory


def measure_in_child(size: int) -> dict[str, float]:
    """`measure(size)` in a process of its own (Django is set up once per process, on that size's database)."""
    done = subprocess.run([sys.executable, "-m", "bench.metadata_cluster", str(size)], cwd=REPO_ROOT,
                          stdout=subprocess.PIPE, check=True)
    return json.loads(done.stdout.decode().splitlines()[-1])


def main() -> int:
    sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "platform")]
    if len(sys.argv) > 1:  # one size, in a child
        figures: dict = {}
        with run_directory(int(sys.argv[1])) as directory:
            try:
                measure(int(sys.argv[1]), directory, figures)
            except Exception as exc:  # noqa: BLE001 - reported in the table; the other sizes still run
                traceback.print_exc()
                figures["error"] = f"{type(exc).__name__}: {exc}"[:300]
        print(json.dumps(figures))
        return 0
    load_before = os.getloadavg()
    results = [measure_in_child(size) for size in SIZES]
    print(f"\nBENCH_METADATA_MODE=cluster make bench-metadata (3 brokers + control plane on SQLite, 127.0.0.1; "
          f"{CHANGES} changes, sample {SAMPLE}; load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    width = max(len(label) for label, *_ in ROWS)
    print(f"{'':<{width}}  " + "  ".join(f"{r['partitions']:>12,.0f}" for r in results)
          + f"  {'Kafka 3.9':>30}  {'target (issue 17)':>18}")
    for label, key, fmt, kafka, target in ROWS[1:]:
        print(f"{label:<{width}}  " + "  ".join(f"{fmt.format(r[key]) if key in r else '-':>12}" for r in results)
              + f"  {kafka:>30}  {target:>18}")
    for r in results:
        if "error" in r:
            print(f"{r['partitions']:,} partitions: stopped by {r['error']}")
    measured = [r for r in results if "rss_broker1_mib" in r]
    if len(measured) > 1:
        first, last = measured[0], measured[-1]
        per = [(last[f"rss_broker{b}_mib"] - first[f"rss_broker{b}_mib"]) * 1024 * 1024
               / (last["partitions"] - first["partitions"]) for b in (1, 2, 3)]
        print(f"broker RSS per hosted partition (slope {first['partitions']:,.0f} -> {last['partitions']:,.0f}): "
              + ", ".join(f"{p / 1024:.1f} KiB" for p in per))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
