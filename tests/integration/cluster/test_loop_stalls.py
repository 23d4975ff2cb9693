"""Issue 18's guard: under a short acks=all load on a 3-broker cluster (produce, replica fetches, a consumer's
fetches), no callback on the data path holds a broker's event loop for 5 ms or more three times.

The brokers run with `strom.loop.slow.callback.ms=5` (`brokerd.slow_callbacks`: asyncio's slow-callback logging,
counting the time a callback held the loop rather than wall time, so being preempted by other processes on a loaded
machine is not reported). A behaviour check, not a timing benchmark: a callback doing blocking file I/O, a long
synchronous pass or a big collection on the loop shows up however fast the machine is. A site fails the guard when
it is slow `REPEATS` times: code that blocks does so on every pass (thousands of requests in the window), while a
single long hold can be the machine itself, which the held-time count cannot tell from work — a write stalled
behind other processes' fsyncs, a page fault, or the GIL held by another of the broker's threads while the kernel
preempted that thread. `make test` runs two passes side by side on two cores: a single 58 ms produce once failed
the former "≥ 50 ms once" rule there, and two fresh-clone runs failed "twice" with two socket reads each
(`_SelectorSocketTransport._read_ready`, a recv and a buffer append: 10.1 and 5.9 ms, 11.1 and 5.9 ms) and
nothing else in the window. Only lines logged while the load runs count: topic creation and the clients' first
requests happen before. The consumer (kafka-python's: confluent-kafka insists on a group id) is group-less, so
`__consumer_offsets` (50 partitions, about 17 more per replica fetcher) is not created: a follower's fetch step over
that many partitions holds the loop ~6 ms on a loaded machine (per-partition request entities and answers), a known
limit (issue 18's report), not what this guard is about.
"""

import re
import time
import uuid
from datetime import datetime

import pytest

from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until

SLOW_CALLBACK_MS = 5
REPEATS = 3
"""A site slow this many times in the window fails the guard (see module)."""
RATE_PER_S = 2000
LOAD_S = 4.0
PARTITIONS = 3
SLOW_LINE = re.compile(r"^(\S+ \S+) WARNING brokerd\.slow_callbacks: slow callback: (.*) held the loop ([\d.]+) ms",
                       re.MULTILINE)
NOT_DATA_PATH = ("'cp-metadata'", "'cp-session'", "'metrics-publisher'")
"""The control plane's metadata long poll and session request, and the metrics round: not the data path."""


@pytest.fixture(scope="module")
def watched_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("watched")
    overrides = {"strom.loop.slow.callback.ms": str(SLOW_CALLBACK_MS), "strom.metrics.topic.enable": "false"}
    with control_plane(directory) as plane, broker_cluster(plane, directory, 3, overrides=overrides) as cluster:
        yield cluster


def site(what: str) -> str:
    """A slow callback's description without addresses, ports and counts: where it ran."""
    return re.sub(r"0x[0-9a-f]+|\d+", "N", what)


def repeated_stalls(log_text: str, start: datetime, end: datetime) -> list[str]:
    """The data-path slow callbacks logged in [start, end] whose site was slow at least `REPEATS` times."""
    found: dict[str, list[str]] = {}
    for stamp, what, held_ms in SLOW_LINE.findall(log_text):
        at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
        if start <= at <= end and not any(name in what for name in NOT_DATA_PATH):
            found.setdefault(site(what), []).append(f"{stamp} {what} held {held_ms} ms")
    return [line for lines in found.values() if len(lines) >= REPEATS for line in lines]


@pytest.mark.slow
def test_no_data_path_callback_holds_a_broker_loop_for_5_ms_repeatedly(watched_cluster):
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition

    cluster = watched_cluster
    topic = f"stalls-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    for partition in range(PARTITIONS):
        cluster.wait_for_isr(topic, 3, partition)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 1})
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()

    def consume(timeout_ms: int) -> int:
        return sum(len(records) for records in consumer.poll(timeout_ms=timeout_ms, max_records=1000).values())

    errors: list[object] = []
    value = b"x" * 1024
    producer.produce(topic, value, on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(30) == 0  # connections and producer id set up before the window opens
    wait_until(lambda: consume(500), 60, message="the first record consumed")
    start = datetime.now()
    total = int(RATE_PER_S * LOAD_S)
    consumed = 0
    began = time.monotonic()
    for sent in range(total):
        while sent > (time.monotonic() - began) * RATE_PER_S:
            producer.poll(0.001)
            consumed += consume(0)
        producer.produce(topic, value, on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(30) == 0 and not errors, errors

    def consumed_all() -> bool:
        nonlocal consumed
        consumed += consume(100)
        return consumed >= total
    wait_until(consumed_all, 30, message="the consumer to read every record")
    consumer.close()
    end = datetime.now()
    slow = {broker_id: repeated_stalls(broker.log_file.read_text(), start, end)
            for broker_id, broker in cluster.brokers.items()}
    if any(slow.values()):
        pytest.fail("\n".join(f"broker {b}: {line}" for b, lines in slow.items() for line in lines), pytrace=False)


def _line(stamp: str, what: str, held_ms: float) -> str:
    return f"{stamp} WARNING brokerd.slow_callbacks: slow callback: {what} held the loop {held_ms} ms (wall 9.9 ms)"


READ = "<Handle _SelectorSocketTransport._read_ready()>"
PRODUCE = "task 'PRODUCE from 127.0.0.1' Dispatcher.dispatch"


@pytest.mark.parametrize(("lines", "flagged"), [
    ([("12:00:01,000", READ, 10.1), ("12:00:01,200", READ, 5.9)], 0),  # two machine hiccups
    ([("12:00:01,000", READ, 10.1), ("12:00:01,200", READ, 5.9), ("12:00:02,000", READ, 7.0)], 3),
    ([("12:00:01,000", PRODUCE, 58.1), ("12:00:01,500", READ, 6.0), ("12:00:02,000", PRODUCE, 6.2)], 0),
    ([("12:00:01,000", "task 'cp-session' ClusterMetadataStore._session_loop", 9.0)] * 3, 0),  # not the data path
    ([("11:59:59,000", PRODUCE, 9.0), ("12:00:01,000", PRODUCE, 9.0), ("12:00:11,000", PRODUCE, 9.0)], 0),  # outside
    ([("12:00:01,000", f"task 'PRODUCE from 127.0.0.1' at connection.py:{n}", 9.0) for n in (1, 2, 3)], 3),
])
def test_a_site_fails_the_guard_when_slow_three_times_in_the_window(lines, flagged):
    log_text = "\n".join(_line(f"2026-11-24 {stamp}", what, held) for stamp, what, held in lines)
    start, end = datetime(2026, 11, 24, 12, 0, 0), datetime(2026, 11, 24, 12, 0, 10)
    assert len(repeated_stalls(log_text, start, end)) == flagged
