"""`make bench-lag`: the lag monitor under 2,000 groups over 20,000 partitions committing every 5 s.

Setup on one standalone Strom broker: topics of `BENCH_LAG_PARTITIONS / BENCH_LAG_GROUPS` (10) partitions
holding `BENCH_LAG_TOPIC_PARTITIONS` (2,000) log partitions in all, `BENCH_LAG_RECORDS` records in each;
every topic is consumed by the same number of the `BENCH_LAG_GROUPS` (2,000) groups, so the groups commit
`BENCH_LAG_PARTITIONS` (20,000) group partitions — the windows the monitor keeps and evaluates. (A
standalone broker creates topics at ~10-20 ms per partition, growing with the partitions it has, which
puts 20,000 log partitions out of a benchmark's setup time; set BENCH_LAG_TOPIC_PARTITIONS=20000 to wait
for it.) `BENCH_LAG_WRITERS` committer processes then send, every `BENCH_LAG_COMMIT_S` seconds, one
OffsetCommit per group (pipelined on one connection per process, generation -1 as an admin commit)
committing every partition of the group's topic at an offset that advances by one record per round
(groups of one topic a few records apart), so every partition has lag, moving offsets and a lag in
seconds to read from the log. The monitor runs as it would in
production (`python -m monitoring`, Burrow's defaults: offset-refresh 10 s, 10 intervals, lag samples
written) in its own process, and is watched for `BENCH_LAG_SECONDS` seconds through its Prometheus
endpoint and /proc:

- keeps up: its unread backlog on `__consumer_offsets` (records) must stay bounded — we report its
  maximum over the second half of the run and the commit records stored per second vs offered;
- an evaluation round's duration (median and max);
- the monitor's CPU (share of one core, utime+stime over wall time) and RSS (max VmRSS).
"""

import datetime
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench.peers import CLOCK_TICKS, free_port, wait_for_port
from bench.peers.kafka_protocol import strom

REPO_ROOT = Path(__file__).resolve().parents[1]


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


GROUPS = env_int("BENCH_LAG_GROUPS", 2000)
PARTITIONS = env_int("BENCH_LAG_PARTITIONS", 20000)
TOPIC_PARTITIONS = env_int("BENCH_LAG_TOPIC_PARTITIONS", 2000)
RECORDS = env_int("BENCH_LAG_RECORDS", 100)
WRITERS = env_int("BENCH_LAG_WRITERS", 4)
COMMIT_S = env_int("BENCH_LAG_COMMIT_S", 5)
DURATION_S = env_int("BENCH_LAG_SECONDS", 180)


def topic_count(partitions_per_topic: int) -> int:
    return max(1, min(GROUPS, TOPIC_PARTITIONS // partitions_per_topic))


def topic_of(group: int, topics: int) -> str:
    return f"lag-bench-{group % topics:05d}"


def create_topics(bootstrap: str, partitions_per_topic: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = topic_count(partitions_per_topic)
    for start in range(0, topics, 50):
        futures = admin.create_topics([NewTopic(topic_of(t, topics), partitions_per_topic, 1)
                                       for t in range(start, min(topics, start + 50))], request_timeout=600)
        for future in futures.values():
            future.result(600)


def fill(bootstrap: str, partitions_per_topic: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                         "queue.buffering.max.messages": 2_000_000, "compression.type": "lz4"})
    topics = topic_count(partitions_per_topic)
    for t in range(topics):
        for p in range(partitions_per_topic):
            for _ in range(RECORDS):
                producer.produce(topic_of(t, topics), b"x" * 100, partition=p)
        producer.poll(0)
    producer.flush(600)


def create_offsets_topic(bootstrap: str) -> None:
    """One commit through librdkafka, which looks the coordinator up (creating `__consumer_offsets`)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lag-bench-warmup"})
    consumer.commit(offsets=[TopicPartition(topic_of(0, 1), 0, 0)], asynchronous=False)
    consumer.close()


def committer(port: int, groups: range, partitions_per_topic: int, stop_at: float) -> None:
    """One process: every COMMIT_S, one OffsetCommit per group of `groups`, pipelined, then the answers."""
    from kio.schema.offset_commit.v3.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    from kio.schema.types import GroupId, TopicName
    from kio.static.primitive import i32, i64, i64Timedelta

    from brokerd.protocol.api_keys import ApiKey
    from tests.support.kafka_wire import decode_response, encode_request, read_frame

    NO_RETENTION = i64Timedelta.parse(datetime.timedelta(milliseconds=-1))  # noqa: N806 (kio type made here)
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    topics = topic_count(partitions_per_topic)
    correlation = 0
    round_number = 0
    next_round = time.monotonic()
    while time.monotonic() < stop_at:
        round_number += 1
        frames = []
        for g in groups:
            correlation += 1
            offset = min(RECORDS, round_number + g // topics)
            topic = OffsetCommitRequestTopic(name=TopicName(topic_of(g, topics)), partitions=tuple(
                OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(offset),
                                             committed_metadata="") for p in range(partitions_per_topic)))
            request = OffsetCommitRequest(group_id=GroupId(f"lag-bench-group-{g:05d}"),
                                          generation_id_or_member_epoch=i32(-1), member_id="",
                                          retention_time=NO_RETENTION, topics=(topic,))
            frames.append(encode_request(ApiKey.OFFSET_COMMIT, 3, correlation, request))
        sock.sendall(b"".join(frames))
        for _ in frames:
            _, response = decode_response(ApiKey.OFFSET_COMMIT, 3, read_frame(sock))
            errors = {p.error_code for t in response.topics for p in t.partitions} - {0}
            if errors:
                raise RuntimeError(f"OffsetCommit failed with error codes {sorted(errors)}")
        next_round += COMMIT_S
        time.sleep(max(0.0, next_round - time.monotonic()))  # the committers' cadence (load shape)


@dataclass
class Sample:
    at: float
    written: int  # records in __consumer_offsets (sum of its partitions' log-end offsets)
    broker_cpu_s: float
    backlog: float
    stored: float
    evaluation_s: float
    record_times_s: float
    partitions: float
    seconds_unknown: float
    cpu_s: float
    rss: int


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=120).read().decode()
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
            if s.name.startswith("strom_lag_monitor_")}


def cpu_rss(pid: int) -> tuple[float, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    rss = next(int(line.split()[1]) * 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    return sum(int(v) for v in fields[11:13]) / CLOCK_TICKS, rss


def main() -> int:
    partitions_per_topic = max(1, PARTITIONS // GROUPS)
    offered = GROUPS * partitions_per_topic / COMMIT_S
    topics = topic_count(partitions_per_topic)
    print(f"lag bench: {GROUPS} groups committing {GROUPS * partitions_per_topic} group partitions "
          f"({topics} topics x {partitions_per_topic} partitions = {topics * partitions_per_topic} log partitions, "
          f"{GROUPS // topics} groups per topic), every {COMMIT_S} s = {offered:.0f} commit records/s offered, "
          f"{RECORDS} records per partition, {DURATION_S} s measured", flush=True)
    with strom() as broker, tempfile.TemporaryDirectory(prefix="bench-lag-") as state:
        started = time.monotonic()
        create_topics(broker.bootstrap, partitions_per_topic)
        fill(broker.bootstrap, partitions_per_topic)
        create_offsets_topic(broker.bootstrap)
        print(f"setup (topics + {topics * partitions_per_topic * RECORDS} records): "
              f"{time.monotonic() - started:.0f} s", flush=True)
        metrics_port = free_port()
        monitor = subprocess.Popen(
            [sys.executable, "-m", "monitoring", "--bootstrap-servers", broker.bootstrap, "--cluster", "bench",
             "--http-port", str(metrics_port), "--state-dir", state, "--log-level", "ERROR"],
            cwd=REPO_ROOT)
        try:
            wait_for_port(monitor, metrics_port)
            stop_at = time.monotonic() + DURATION_S
            slices = [range(GROUPS)[i::WRITERS] for i in range(WRITERS)]
            writers = [multiprocessing.Process(target=committer, args=(broker.port, s, partitions_per_topic, stop_at))
                       for s in slices]
            for w in writers:
                w.start()
            samples = watch(broker, monitor.pid, metrics_port, stop_at)
            for w in writers:
                w.join()
        finally:
            monitor.terminate()
            try:
                monitor.wait(120)
            except subprocess.TimeoutExpired:
                print("the monitor did not stop within 120 s of SIGTERM: killed", flush=True)
                monitor.kill()
                monitor.wait()
    report(samples, offered)
    return 0


def offsets_topic_size(bootstrap: str) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_offsets({TopicPartition("__consumer_offsets", p): OffsetSpec.latest() for p in range(50)},
                                 request_timeout=60)
    return sum(f.result().offset for f in futures.values())


def watch(broker, pid: int, port: int, stop_at: float) -> list[Sample]:
    samples = []
    while time.monotonic() < stop_at:
        time.sleep(COMMIT_S)  # the sampling period of this report
        metrics = scrape(port)
        cpu_s, rss = cpu_rss(pid)
        sample = Sample(time.monotonic(), offsets_topic_size(broker.bootstrap), broker.cpu_seconds(),
                        metrics["strom_lag_monitor_offsets_topic_lag_records"],
                        metrics["strom_lag_monitor_commits_stored_total"],
                        metrics["strom_lag_monitor_evaluation_duration_seconds"],
                        metrics["strom_lag_monitor_record_times_duration_seconds"],
                        metrics["strom_lag_monitor_partitions"],
                        metrics["strom_lag_monitor_lag_seconds_unknown_partitions"], cpu_s, rss)
        samples.append(sample)
        print(f"  t={sample.at - samples[0].at:5.0f}s written={sample.written:9d} backlog={sample.backlog:8.0f} "
              f"stored={sample.stored:9.0f} round={sample.evaluation_s:6.2f}s "
              f"(record times {sample.record_times_s:5.2f}s) partitions={sample.partitions:6.0f} "
              f"seconds-unknown={sample.seconds_unknown:6.0f} "
              f"rss={sample.rss / 2**20:6.0f} MiB", flush=True)
    return samples


def report(samples: list[Sample], offered: float) -> None:
    second_half = samples[len(samples) // 2:]
    span = second_half[-1].at - second_half[0].at
    stored_rate = (second_half[-1].stored - second_half[0].stored) / span if span else 0.0
    written_rate = (second_half[-1].written - second_half[0].written) / span if span else 0.0
    wall = samples[-1].at - samples[0].at
    cpu = (samples[-1].cpu_s - samples[0].cpu_s) / wall
    broker_cpu = (samples[-1].broker_cpu_s - samples[0].broker_cpu_s) / wall
    rounds = sorted({s.evaluation_s for s in samples if s.evaluation_s > 0})
    print()
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| commit records per s (2nd half): offered / written by the broker / stored by the monitor | "
          f"{offered:.0f} / {written_rate:.0f} / {stored_rate:.0f} |")
    backlog = max(s.backlog for s in second_half)
    print(f"| __consumer_offsets backlog, max over the 2nd half (records) | {backlog:.0f} |")
    print(f"| __consumer_offsets backlog at the end (records) | {samples[-1].backlog:.0f} |")
    if rounds:
        print(f"| evaluation round, median / max (s) | {statistics.median(rounds):.2f} / {max(rounds):.2f} |")
    print(f"| group partitions per round | {samples[-1].partitions:.0f} |")
    unknown = statistics.median(s.seconds_unknown for s in second_half)
    print(f"| partitions without lag seconds in a round (median, 2nd half) | {unknown:.0f} |")
    print(f"| monitor CPU (share of one core) | {cpu:.2f} |")
    print(f"| monitor RSS max (MiB) | {max(s.rss for s in samples) / 2**20:.0f} |")
    print(f"| broker CPU (share of one core) | {broker_cpu:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
