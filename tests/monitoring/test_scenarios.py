"""The lag monitor end to end: a real standalone broker, real confluent-kafka producers and consumers, and
one `LagMonitor` driven directly, with short intervals (heads every 0.25 s, windows of 5 commits, a round
every 0.25 s). Each test uses its own topic and group and waits on the monitor's published results.

Consumers here commit on a pace (`pace`): that sleep is the consumer's behaviour under test (how often it
commits), never a wait for the monitor, which is always polled with a deadline."""

import json
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from monitoring.collector.record_times import RecordTimeReader
from monitoring.config import SAMPLES_TOPIC, MonitorConfig
from monitoring.model import GroupResult, Status
from monitoring.persistence import MemoryStore
from monitoring.service import LagMonitor
from tests.support.broker import standalone_broker
from tests.support.polling import wait_until

COMMIT_PERIOD_S = 0.4


class RecordingSink:
    def __init__(self) -> None:
        self.notifications = []

    def deliver(self, notifications) -> None:
        self.notifications.extend(notifications)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("lag-broker")) as running:
        yield running


@pytest.fixture(scope="module")
def sink():
    return RecordingSink()


@pytest.fixture(scope="module")
def monitor(broker, sink) -> Iterator[LagMonitor]:
    config = MonitorConfig(bootstrap_servers=broker.bootstrap, cluster="scenario", offset_refresh_s=0.25,
                           topic_refresh_s=0.25, intervals=5, evaluation_interval_s=0.25, state_save_interval_s=5,
                           min_stop_grace_s=1.0)
    running = LagMonitor(config, MemoryStore(), sink)
    running.start()
    yield running
    running.stop()


def new_topic(broker, monitor: LagMonitor, partitions: int = 1) -> str:
    """A new topic, once the monitor knows its heads (before that, commits to it are dropped, as in Burrow)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    wait_until(lambda: monitor.topic_heads(name), 10, message=f"the monitor to see {name}")
    return name


def produce(broker, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=b"r%d" % i, partition=partition)
    producer.flush(10)


def group_consumer(broker, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000})


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)


def pace() -> None:
    time.sleep(COMMIT_PERIOD_S)  # the consumer's commit cadence (behaviour under test, not synchronisation)


def result_where(monitor: LagMonitor, group: str, condition, timeout_s: float = 20.0,
                 message: str = "") -> GroupResult:
    def check():
        result = monitor.results().get(group)
        return result if result is not None and condition(result) else None
    return wait_until(check, timeout_s, interval_s=0.05, message=message or f"{group} to reach the condition")


def partition_statuses(result: GroupResult) -> list[Status]:
    return [p.status for p in result.partitions]


def test_a_consumer_that_stops_is_stop(broker, monitor, sink):
    topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
    consumer = group_consumer(broker, group)
    for offset in range(5, 35, 5):  # keeps up with a moving log
        produce(broker, topic, 5)
        commit(consumer, topic, offset)
        pace()
    healthy = result_where(monitor, group, lambda r: r.partitions[0].committed_offset == 30,
                           message="the last commit")
    assert healthy.status is Status.OK
    consumer.close()
    produce(broker, topic, 20)  # the log moves on; the group does not
    stopped = result_where(monitor, group, lambda r: r.partitions[0].status is Status.STOP, message="STOP")
    assert stopped.status is Status.ERR and stopped.partitions[0].lag > 0
    opened = [n for n in sink.notifications if n.result.group == group]
    assert [n.kind.value for n in opened][:1] == ["open"]


def committing_until(monitor: LagMonitor, group: str, step, condition, message: str,
                     max_commits: int = 40) -> GroupResult:
    """Run the consumer's `step` (a commit, and maybe more) at its cadence until the monitor's latest result
    for the group meets `condition`."""
    for _ in range(max_commits):
        step()
        pace()
        result = monitor.results().get(group)
        if result is not None and condition(result):
            return result
    raise AssertionError(f"{group} never reached {message} within {max_commits} commits")


def test_a_slow_consumer_warns_then_errs_when_it_stalls(broker, monitor):
    topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
    consumer = group_consumer(broker, group)
    committed, produced = [0], [0]

    def grow(count: int) -> None:
        """Produce `count` more and wait until the monitor's head shows them, so that the next commit's lag is
        measured against the new head however slowly the heads are refreshed under load."""
        produce(broker, topic, count)
        produced[0] += count
        wait_until(lambda: (monitor.topic_heads(topic) or [0])[0] >= produced[0], 10,
                   message=f"the monitor to see {topic}'s head at {produced[0]}")

    def fall_behind():  # 40 produced per commit, 5 consumed: the lag grows at every commit
        grow(40)
        committed[0] += 5
        commit(consumer, topic, committed[0])

    warned = committing_until(monitor, group, fall_behind, lambda r: r.status is Status.WARN, "WARN")
    assert partition_statuses(warned) == [Status.WARN]

    def stuck():  # keeps committing the same offset while the log grows
        grow(10)
        commit(consumer, topic, committed[0])

    stalled = committing_until(monitor, group, stuck, lambda r: r.status is Status.ERR, "ERR")
    assert partition_statuses(stalled) == [Status.STALL]
    consumer.close()


def test_a_reset_to_earliest_is_rewind(broker, monitor):
    topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
    produce(broker, topic, 200)
    consumer = group_consumer(broker, group)
    for offset in (20, 40, 60, 80, 100):
        commit(consumer, topic, offset)
        pace()
    consumer.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    reset = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])])
    reset[group].result(10)  # kafka-consumer-groups --reset-offsets --to-earliest, as an admin client does it
    consumer = group_consumer(broker, group)
    committed = [0]

    def reprocess():  # from the start again, still below the offset before the reset
        committed[0] += 5
        commit(consumer, topic, committed[0])

    rewound = committing_until(monitor, group, reprocess, lambda r: r.partitions[0].status is Status.REWIND,
                               "REWIND", max_commits=15)
    assert rewound.status is Status.ERR
    consumer.close()


def test_a_caught_up_consumer_on_an_idle_topic_stays_ok(broker, monitor):
    topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
    produce(broker, topic, 10)
    consumer = group_consumer(broker, group)
    for _ in range(2):
        commit(consumer, topic, 10)
        pace()
    result_where(monitor, group, lambda r: r.partitions[0].committed_offset == 10, message="the commit")
    # Idle for many windows' worth of time: every round must say OK (watched round by round).
    rounds = set()
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline:
        result = monitor.results()[group]
        rounds.add(result.evaluated_ms)
        assert result.status is Status.OK and result.partitions[0].lag == 0, result
        assert result.partitions[0].lag_seconds == 0.0
        time.sleep(0.05)
    assert len(rounds) >= 8
    # One record arrives after the long idle time and is consumed within the consumer's cadence.
    produce(broker, topic, 1)
    lagging = result_where(monitor, group, lambda r: r.partitions[0].lag == 1, message="the new record seen")
    assert lagging.status is Status.OK, "a record younger than the window must not make the consumer STOP"
    commit(consumer, topic, 11)
    result_where(monitor, group, lambda r: r.partitions[0].committed_offset == 11 and r.status is Status.OK)
    consumer.close()


def test_lag_seconds_is_the_age_of_the_oldest_unconsumed_record(broker, monitor):
    topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
    produce(broker, topic, 5)
    time.sleep(1.5)  # gives the next records a distinct append time (test data, not synchronisation)
    produced_ms = time.time() * 1000
    produce(broker, topic, 5)
    consumer = group_consumer(broker, group)
    commit(consumer, topic, 5)  # consumed the first five: the oldest unconsumed one was produced at produced_ms
    for _ in range(5):
        result = result_where(monitor, group, lambda r: (r.partitions[0].committed_offset, r.partitions[0].end_offset)
                              == (5, 10) and r.partitions[0].lag_seconds is not None, message="lag seconds")
        truth = (result.evaluated_ms - produced_ms) / 1000
        assert abs(result.partitions[0].lag_seconds - truth) < 1.0, (result.partitions[0].lag_seconds, truth)
        assert result.partitions[0].lag == 5
        time.sleep(0.3)  # sample the gauge at several moments
    commit(consumer, topic, 10)
    caught_up = result_where(monitor, group, lambda r: r.partitions[0].committed_offset == 10)
    assert caught_up.partitions[0].lag_seconds == 0.0
    consumer.close()


def test_every_round_writes_lag_samples(broker, monitor):
    topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
    produce(broker, topic, 7)
    consumer = group_consumer(broker, group)
    commit(consumer, topic, 3)
    result_where(monitor, group, lambda r: (r.partitions[0].committed_offset, r.partitions[0].end_offset) == (3, 7))
    consumer.close()
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"reader-{group}",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    reader.subscribe([SAMPLES_TOPIC])
    samples = []

    def wanted(sample):  # the committed offset and the head are known, and so is the record time
        return (sample["committed_offset"], sample["end_offset"]) == (3, 7) and sample["lag_seconds"] is not None

    def sample_seen():
        for message in reader.consume(1000, 0.2):
            if message.error() is None and message.key() == group.encode():
                samples.append((message, json.loads(message.value())))
        return any(wanted(s) for _, s in samples)
    wait_until(sample_seen, 20, message="a lag sample of the group")
    reader.close()
    message, sample = next((m, s) for m, s in samples if wanted(s))
    assert set(sample) == {"ts", "cluster", "group", "topic", "partition", "committed_offset", "end_offset", "lag",
                           "lag_seconds", "status", "group_status", "threshold_breached"}
    assert (sample["cluster"], sample["group"], sample["topic"], sample["partition"]) == ("scenario", group, topic, 0)
    assert (sample["end_offset"], sample["lag"]) == (7, 4)
    assert sample["status"] in ("OK", "WARN", "STOP", "STALL", "REWIND")  # one partition: the group's verdict
    assert sample["group_status"] == ("ERR" if sample["status"] in ("STOP", "STALL", "REWIND") else sample["status"])
    assert sample["threshold_breached"] is False and sample["lag_seconds"] > 0
    assert message.timestamp()[1] == sample["ts"]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, SAMPLES_TOPIC)])
    described = next(iter(configs.values())).result(10)
    assert described["retention.ms"].value == str(7 * 86_400_000)
    assert described["cleanup.policy"].value == "delete"


def test_a_restart_neither_blinds_nor_re_alerts(broker):
    store = MemoryStore()
    config = MonitorConfig(bootstrap_servers=broker.bootstrap, cluster="restart", offset_refresh_s=0.25,
                           topic_refresh_s=0.25, intervals=5, evaluation_interval_s=0.25, state_save_interval_s=60,
                           min_stop_grace_s=1.0, samples_topic=None)
    first_sink = RecordingSink()
    first = LagMonitor(config, store, first_sink)
    first.start()
    try:
        topic, group = new_topic(broker, first), f"g-{uuid.uuid4().hex[:8]}"
        consumer = group_consumer(broker, group)
        for offset in range(5, 40, 5):
            produce(broker, topic, 5)
            commit(consumer, topic, offset)
            pace()
        consumer.close()
        produce(broker, topic, 20)
        result_where(first, group, lambda r: r.status is Status.ERR and r.complete == 1.0, message="ERR")
        wait_until(lambda: [n.kind.value for n in first_sink.notifications if n.result.group == group] == ["open"],
                   10, message="the open announcement")
        incident_id = next(i.id for i in first.open_incidents() if i.group == group)
    finally:
        first.stop()  # saves the windows, heads and positions
    second_sink = RecordingSink()
    second = LagMonitor(config, store, second_sink)
    second.start()
    try:
        rounds = set()
        while len(rounds) < 4:  # the first rounds after the restart, one by one
            result = result_where(second, group, lambda r: r.evaluated_ms not in rounds, message="a new round")
            rounds.add(result.evaluated_ms)
            assert result.status is Status.ERR and result.complete == 1.0, "restored windows: not blind"
        assert [n for n in second_sink.notifications if n.result.group == group] == [], "no second open"
        assert [i.id for i in second.open_incidents() if i.group == group] == [incident_id]
    finally:
        second.stop()


def test_record_times_answer_every_group_position_on_a_partition_from_one_pass(broker, monitor):
    topic = new_topic(broker, monitor, partitions=2)
    before_ms = time.time() * 1000
    produce(broker, topic, 30, partition=0)
    produce(broker, topic, 3, partition=1)
    after_ms = time.time() * 1000
    reader = RecordTimeReader(broker.bootstrap)
    try:
        times = reader.append_times([(topic, 0, 0), (topic, 0, 17), (topic, 0, 29), (topic, 1, 2), (topic, 1, 3)],
                                    max_partitions=2)
        assert set(times) == {(topic, 0, 0), (topic, 0, 17), (topic, 0, 29), (topic, 1, 2), (topic, 1, 3)}
        assert all(before_ms - 1 <= times[p] <= after_ms + 1 for p in times if p != (topic, 1, 3))
        assert times[(topic, 1, 3)] is None  # at the log end: nothing unconsumed
        # No fetch allowed: a cached position and one within what the pass read (a group that moved on) are
        # answered, one past it is unknown.
        produce(broker, topic, 1, partition=0)
        again = reader.append_times([(topic, 0, 5), (topic, 0, 17), (topic, 0, 30)], max_partitions=0)
        assert set(again) == {(topic, 0, 5), (topic, 0, 17)}
        assert again[(topic, 0, 17)] == times[(topic, 0, 17)] and before_ms - 1 <= again[(topic, 0, 5)] <= after_ms + 1
    finally:
        reader.close()
