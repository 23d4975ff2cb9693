"""Partition reassignment on real brokers (issue 13).

First the acceptance run: 3 brokers, a 4th added later, an idempotent acks=all producer writing all along and a
consumer group reading; the executor (REST) (a) raises a topic's RF from 2 to 3, (b) spreads 12 partitions and
the loaded one onto the new broker with a 2 MB/s throttle, in batches of at most 4 moves per broker, (c)
decommissions broker 2 while a source broker is SIGKILLed and restarted mid-copy, (d) cancels a move half-way.
After each: every acknowledged record once in the log, the group saw every one, the replicas byte-identical up
to the high watermark, the removed replicas' directories gone, no throttle config left. The same checks end an
execution during which the control plane (web and controller) was SIGKILLed mid-copy and started again.

Then kafka-python's admin client moves a partition from brokers 1, 2 to 3, 4 while the producer keeps writing,
and a reassignment that cannot finish (its new replica's broker is down) is listed and cancelled over the wire,
with Kafka's errors for a bad target and for cancelling nothing; the same calls from sarama 1.45's ClusterAdmin (Go,
built offline from Debian trixie's packages); and the copy rate under a 2 MB/s throttle.
The module shares one cluster: its 4th broker starts in the acceptance test, so run the module in file order."""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from kafkaspec.replication_throttles import FOLLOWER_REPLICAS, LEADER_REPLICAS
from tests.integration.cluster.test_faults import high_watermark, wait_for_progress
from tests.integration.cluster.workload import (
    AckingProducer,
    audit_acknowledged,
    consume_all,
    end_of_acknowledged,
    replica_bytes,
)
from tests.support.clients import run_client, sarama_admin_client
from tests.support.cluster import Cluster, broker_cluster
from tests.support.controlplane import ADMIN_PASSWORD, ADMIN_USER, ControlPlane, control_plane
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def cluster4(tmp_path_factory):
    """Brokers 1-3 running; broker 4 is added by the first test that needs it (`four_brokers`)."""
    directory = tmp_path_factory.mktemp("cluster")
    with control_plane(directory) as plane, broker_cluster(plane, directory, 4, started=3) as running:
        yield running


def add_broker_4(cluster: Cluster) -> None:
    if not cluster.brokers[4].alive:
        cluster.start(4)
    wait_until(lambda: any(b["broker_id"] == 4 and b["state"] == "running"
                           for b in cluster.plane.metadata()["brokers"]), 30, message="broker 4 running")


@pytest.fixture
def four_brokers(cluster4):
    add_broker_4(cluster4)
    return cluster4


#
# The acceptance run
#

SPREAD_PARTITIONS, SPREAD_BYTES = 12, 400_000
"""The spread topic: 12 partitions of 400 KB each (about 2.4 s of copying at 2 MB/s onto the new broker)."""


def fill(cluster: Cluster, topic: str, partition: int, size: int) -> None:
    """Append `size` bytes of 10 KB records to a partition (acks=all), in batches of one or two records: a replica
    fetch always returns at least one batch, so large batches would pass a throttle in one piece."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 20_000})
    for _ in range(size // 10_000):
        producer.produce(topic, b"s" * 10_000, partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0
    del producer  # librdkafka would keep reconnecting to the brokers after the module's cluster stops


class Rest:
    """The public REST API as the local admin (an API token)."""

    def __init__(self, plane: ControlPlane, token_name: str):
        self.url = plane.url + "/api"
        status, body = self._call("POST", "/token/", {"username": ADMIN_USER, "password": ADMIN_PASSWORD,
                                                      "name": token_name}, token=None)
        assert status == 200, body
        self.token = body["token"]

    def _call(self, method, path, body=None, token=""):
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Token {token or self.token}"
        request = urllib.request.Request(self.url + path, method=method, headers=headers,
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def execute(self, body: dict) -> dict:
        status, answer = self._call("POST", "/reassignments/executions/", body)
        assert status == 201, answer
        return answer

    def execution(self, execution_id: int) -> dict:
        status, answer = self._call("GET", f"/reassignments/executions/{execution_id}/")
        assert status == 200, answer
        return answer

    def cancel(self, execution_id: int) -> dict:
        status, answer = self._call("POST", f"/reassignments/executions/{execution_id}/cancel/")
        assert status == 200, answer
        return answer

    def wait_finished(self, execution_id: int, timeout_s: float = 120, each=None) -> dict:
        def finished():
            state = self.execution(execution_id)
            if each is not None:
                each(state)
            return state if state["state"] not in ("running", "paused") else None
        return wait_until(finished, timeout_s, interval_s=0.2, message=f"reassignment {execution_id} to finish")


class GroupReader:
    """A consumer group member reading `topic` from the start in a thread; `values` is everything it saw."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        self.values: set[int] = set()
        self._stop = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                                   "enable.auto.commit": True, "auto.commit.interval.ms": 500})
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, name="group-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.consume(500, 0.2):
                if message.error() is None:
                    self.values.add(int(message.value()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()


def watermark(cluster: Cluster, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "hw"})
    try:
        return consumer.get_watermark_offsets(ConfluentPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def identical_up_to_hw(cluster: Cluster, topic: str, partition: int) -> bool:
    """The partition's replicas (as the metadata store has them) hold the same bytes below its high watermark."""
    replicas = cluster.partition_state(topic, partition)["replicas"]
    hw = watermark(cluster, topic, partition)
    copies = [replica_bytes(cluster.brokers[b].log_dir, topic, hw, partition) for b in replicas]
    return all(copy == copies[0] for copy in copies)


def check_step(step: str, cluster: Cluster, producer: AckingProducer, reader: GroupReader, load: str,
               moves: list[dict], checked_topics: set[str]) -> None:
    """After a step: `moves` (the execution's tasks) ended as their state says, removed replicas' directories
    are gone, no throttle config is left, every acknowledged record is in `load` once and was seen by the group,
    and every moved partition of `checked_topics` (and `load`) has identical replicas below its high watermark."""
    for task in moves:
        state = cluster.partition_state(task["topic"], task["partition"])
        expected = task["target_replicas"] if task["state"] == "done" else task["source_replicas"]
        assert (state["replicas"], state["adding_replicas"], state["removing_replicas"]) == (expected, [], []), \
            (step, task, state)
        for gone in set(task["source_replicas"]) ^ set(task["target_replicas"]):
            if gone not in expected:
                directory = cluster.brokers[gone].log_dir / f"{task['topic']}-{task['partition']}"
                wait_until(lambda d=directory: not d.exists(), 30, message=f"{step}: {directory} deleted")
    image = cluster.plane.metadata()
    assert image["broker_configs"] == {}, (step, image["broker_configs"])
    assert not [t["name"] for t in image["topics"] if {LEADER_REPLICAS, FOLLOWER_REPLICAS} & set(t["configs"])], step

    acks = list(producer.acks)
    assert not producer.errors, (step, producer.errors[:5])
    hw = wait_until(lambda: (lambda h: h if h >= end_of_acknowledged(acks) else None)(watermark(cluster, load, 0)),
                    30, message=f"{step}: the high watermark to cover every acknowledgement")
    audit_acknowledged(acks, consume_all(cluster.bootstrap, load, hw))
    wait_until(lambda: {a.value for a in acks} <= reader.values, 60, message=f"{step}: the group to see every record")
    for topic, partition in {(load, 0)} | {(t["topic"], t["partition"]) for t in moves if t["topic"] in checked_topics}:
        wait_until(lambda t=topic, p=partition: identical_up_to_hw(cluster, t, p), 30,
                   message=f"{step}: {topic}-{partition} replicas identical below the high watermark")
    gap = max((b.at - a.at for a, b in zip(acks, acks[1:], strict=False)), default=0.0)
    print(f"{step}: {len(moves)} move(s) checked, {len(acks)} records acknowledged so far, longest pause between "
          f"acknowledgements {gap:.1f} s")


@pytest.mark.slow
def test_acceptance_rf_spread_decommission_under_sigkill_and_cancel(cluster4, topic_name):
    cluster = cluster4
    if cluster.brokers[4].alive:
        pytest.fail("this test adds broker 4 itself: run the module in file order")
    load, spread = f"{topic_name}-load", f"{topic_name}-spread"
    cluster.create_topic(load, assignments=[[1, 2]], configs={"min.insync.replicas": "2"})
    cluster.create_topic(spread, assignments=[[1 + p % 3, 1 + (p + 1) % 3] for p in range(SPREAD_PARTITIONS)])
    for partition in range(SPREAD_PARTITIONS):
        fill(cluster, spread, partition, SPREAD_BYTES)
    rest = Rest(cluster.plane, topic_name)
    producer = AckingProducer(cluster.bootstrap, load, rate_per_s=300).start()
    reader = GroupReader(cluster.bootstrap, load, f"{topic_name}-group")
    started = time.monotonic()
    try:
        wait_for_progress(producer)

        # (a) RF 2 -> 3, from a proposal
        execution = rest.execute({"proposal": {"goal": "replication-factor", "topic": load, "replication_factor": 3}})
        done = rest.wait_finished(execution["id"])
        assert done["state"] == "completed" and [t["target_replicas"] for t in done["tasks"]] == [[1, 2, 3]]
        check_step("(a) RF 2 -> 3", cluster, producer, reader, load, done["tasks"], {load})

        # (b) a 4th broker joins; 12 partitions and the loaded one spread onto it at 2 MB/s, 4 moves at a time
        add_broker_4(cluster)
        plan = [{"topic": spread, "partition": p, "replicas": [1 + p % 3, 4]} for p in range(SPREAD_PARTITIONS)]
        plan.append({"topic": load, "partition": 0, "replicas": [4, 2, 3]})
        concurrent = []
        execution = rest.execute({"partitions": plan, "throttle": 2_000_000, "max_moves_per_broker": 4})
        begun = time.monotonic()
        done = rest.wait_finished(execution["id"], each=lambda s: concurrent.append(
            sum(1 for t in s["tasks"] if t["state"] in ("copying", "in_isr"))))
        took = time.monotonic() - begun
        assert done["state"] == "completed", done
        assert 0 < max(concurrent) <= 4, concurrent
        print(f"(b) spread 13 partitions ({SPREAD_PARTITIONS * SPREAD_BYTES / 1e6:.1f} MB) onto broker 4 at 2 MB/s in "
              f"{took:.1f} s, at most {max(concurrent)} moves at once")
        check_step("(b) spread onto broker 4", cluster, producer, reader, load, done["tasks"], {spread})

        # (c) decommission broker 2; the leader of a partition being copied is SIGKILLed mid-copy, then restarted
        execution = rest.execute({"proposal": {"goal": "decommission", "brokers": [2]}, "throttle": 1_000_000})
        copying = wait_until(lambda: next((t for t in rest.execution(execution["id"])["tasks"]
                                           if t["topic"] == spread and t["state"] == "copying"), None),
                             90, interval_s=0.05, message="a spread partition copying")  # (the largest go last)
        source = cluster.partition_state(spread, copying["partition"])["leader"]
        cluster.kill(source)
        assert rest.execution(execution["id"])["state"] == "running"
        wait_until(lambda: any(b["broker_id"] == source and b["state"] != "running"
                               for b in cluster.plane.metadata()["brokers"]), 30, message=f"broker {source} fenced")
        cluster.start(source)
        done = rest.wait_finished(execution["id"], 180)
        assert done["state"] == "completed", [t for t in done["tasks"] if t["state"] != "done"]
        assert all(2 not in t["target_replicas"] for t in done["tasks"])
        assert not any(2 in p["replicas"] for t in cluster.plane.metadata()["topics"] for p in t["partitions"])
        print(f"(c) decommissioned broker 2 ({len(done['tasks'])} partitions) with broker {source} SIGKILLed "
              f"mid-copy of {spread}-{copying['partition']}")
        check_step("(c) decommission 2 under SIGKILL", cluster, producer, reader, load, done["tasks"], {spread})

        # (d) a move cancelled half-way: spread-0 onto broker 2 at 100 KB/s, cancelled once 2 holds 30-90 % of it
        before = cluster.partition_state(spread, 0)["replicas"]
        execution = rest.execute({"partitions": [{"topic": spread, "partition": 0, "replicas": [before[0], 2]}],
                                  "throttle": 100_000})
        copy = cluster.brokers[2].log_dir / f"{spread}-0"
        wait_until(lambda: log_bytes(copy) >= SPREAD_BYTES * 0.3, 30, interval_s=0.05,
                   message="the copy to broker 2 to be under way")
        assert log_bytes(copy) < SPREAD_BYTES * 0.9
        cancelled = rest.cancel(execution["id"])
        assert cancelled["state"] == "cancelled" and cancelled["tasks"][0]["state"] == "cancelled", cancelled
        check_step("(d) cancel half-way", cluster, producer, reader, load, cancelled["tasks"], {spread})
        print(f"acceptance run: {time.monotonic() - started:.0f} s")
    finally:
        producer.stop()
        reader.stop()


RESTART_BYTES = 600_000
"""Each partition moved across the control-plane restart: 3 s of copying at its 200 KB/s throttle."""


@pytest.mark.slow
def test_an_execution_carries_on_through_a_control_plane_restart(four_brokers, topic_name):
    """The executor's state is in the database: the control plane (web and controller) is SIGKILLed while a
    throttled move copies and another waits its turn, and started again (the controller first); the new
    controller fences no broker and finishes the execution, and the step ends as the acceptance run's do (every
    acknowledged record once, seen by the group, replicas identical, removed directories gone, no throttle left)."""
    cluster = four_brokers
    load, big = f"{topic_name}-load", f"{topic_name}-big"
    cluster.create_topic(load, assignments=[[1, 2]], configs={"min.insync.replicas": "2"})
    cluster.create_topic(big, assignments=[[1, 2], [1, 2]])
    for partition in range(2):
        fill(cluster, big, partition, RESTART_BYTES)
    rest = Rest(cluster.plane, topic_name)
    producer = AckingProducer(cluster.bootstrap, load, rate_per_s=300).start()
    reader = GroupReader(cluster.bootstrap, load, f"{topic_name}-group")
    try:
        wait_for_progress(producer)
        plan = [{"topic": load, "partition": 0, "replicas": [2, 3]}]
        plan += [{"topic": big, "partition": p, "replicas": [3, 4]} for p in range(2)]
        execution = rest.execute({"partitions": plan, "throttle": 200_000, "max_moves_per_broker": 1})
        copying = wait_until(lambda: next((t for t in rest.execution(execution["id"])["tasks"]
                                           if t["topic"] == big and t["state"] == "copying"), None),
                             90, interval_s=0.05, message=f"a {big} partition copying")
        copy = cluster.brokers[3].log_dir / f"{big}-{copying['partition']}"
        wait_until(lambda: log_bytes(copy) >= RESTART_BYTES * 0.2, 30, interval_s=0.05,
                   message="the copy to broker 3 to be under way")
        before = rest.execution(execution["id"])
        assert [t["state"] for t in before["tasks"] if t["topic"] == big] in (["copying", "pending"],
                                                                                ["pending", "copying"]), before
        assert cluster.partition_state(big, copying["partition"])["adding_replicas"] == [3, 4]
        epoch = cluster.plane.controller_state()[0]

        cluster.plane.kill_web()
        cluster.plane.kill_controller()
        killed_at = log_bytes(copy)
        # The controller first: it takes the lease over while no heartbeat can reach the web process yet, and must
        # not fence the brokers for it.
        cluster.plane.start_controller()
        cluster.plane.wait_for_controller(min_epoch=epoch + 1)
        cluster.plane.start_web()
        assert {b["broker_id"]: b["state"] for b in cluster.plane.metadata()["brokers"]} == {
            b: "running" for b in cluster.brokers}
        print(f"\ncontrol plane SIGKILLed with {killed_at / RESTART_BYTES:.0%} of {big}-{copying['partition']} "
              f"copied, the other {big} move pending; controller epoch {epoch} -> "
              f"{cluster.plane.controller_state()[0]}")

        done = rest.wait_finished(execution["id"], 120)
        assert done["state"] == "completed", done
        assert [t["state"] for t in done["tasks"]] == ["done"] * 3, done["tasks"]
        check_step("control plane restarted mid-copy", cluster, producer, reader, load, done["tasks"], {big})
    finally:
        producer.stop()
        reader.stop()


#
# Kafka's Admin API and the throttle
#


@pytest.mark.slow
def test_move_a_partition_under_load_then_cancel_one_over_the_wire(four_brokers, topic_name):
    cluster = four_brokers
    cluster.create_topic(topic_name, assignments=[[1, 2]], configs={"min.insync.replicas": "2"})
    tp = TopicPartition(topic_name, 0)
    producer = AckingProducer(cluster.bootstrap, topic_name, rate_per_s=500).start()
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        wait_for_progress(producer)
        assert admin.alter_partition_reassignments({tp: [3, 4]}) == {tp: None}
        moved = wait_until(lambda: (lambda s: s if s["replicas"] == [3, 4] else None)(
            cluster.partition_state(topic_name, 0)), 60, message="the reassignment to complete")
        assert (moved["isr"], moved["leader"], moved["adding_replicas"]) == ([3, 4], 3, [])
        assert admin.list_partition_reassignments() == {}
        wait_for_progress(producer)  # the producer follows the leader to broker 3
        for gone in (1, 2):
            wait_until(lambda b=gone: not (cluster.brokers[b].log_dir / f"{topic_name}-0").exists(), 30,
                       message=f"broker {gone} to delete its removed replica")

        # A reassignment that cannot complete: broker 2 is down, so its new replica never catches up.
        # (Broker 1, the lowest running id, stays up: it is the controller admin clients talk to.)
        cluster.stop(2)
        assert admin.alter_partition_reassignments({tp: [3, 4, 2]}) == {tp: None}
        assert admin.list_partition_reassignments() == {
            tp: {"replicas": [3, 4, 2], "adding_replicas": [2], "removing_replicas": []}}
        assert admin.alter_partition_reassignments({tp: [3, 9]}) == {tp: InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
        assert cluster.partition_state(topic_name, 0)["replicas"] == [3, 4]
        wait_for_progress(producer)
    finally:
        admin.close()
        producer.stop()
        cluster.start(2)

    assert not producer.errors, producer.errors[:5]
    hw = wait_until(lambda: (lambda h: h if h >= end_of_acknowledged(producer.acks) else None)(
        high_watermark(cluster, topic_name)), 30, message="the high watermark to cover every acknowledgement")
    audit_acknowledged(producer.acks, consume_all(cluster.bootstrap, topic_name, hw))
    copies = wait_until(lambda: (lambda c: c if c[3] == c[4] else None)(
        {b: replica_bytes(cluster.brokers[b].log_dir, topic_name, hw) for b in (3, 4)}), 30,
        message="the new replicas to converge")
    assert copies[3], "no data below the high watermark"
    print(f"\nmoved {topic_name}-0 from [1, 2] to [3, 4] under load: {len(producer.acks)} records acknowledged, "
          f"{len(copies[3])} bytes per replica below HW {hw}")


INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION, NO_REASSIGNMENT_IN_PROGRESS = 39, 3, 85
"""Kafka's error codes, as sarama reports them."""


@pytest.mark.slow
def test_sarama_cluster_admin_moves_lists_and_cancels(four_brokers, topic_name):
    """sarama's ClusterAdmin (1.45, Debian trixie's golang-github-ibm-sarama-dev): AlterPartitionReassignments
    moves a partition with data from [1, 2] to [3, 4]; a move that cannot finish (its new replica's broker is down)
    is listed by ListPartitionReassignments and cancelled with a nil target; Kafka's errors for a bad target, an
    unknown topic and cancelling nothing."""
    cluster = four_brokers
    client = sarama_admin_client()
    cluster.create_topic(topic_name, assignments=[[1, 2]])
    fill(cluster, topic_name, 0, 200_000)

    def sarama(*call: str, topic: str = topic_name) -> dict:
        run = run_client([str(client), "-brokers", cluster.bootstrap, "-topic", topic, *call], timeout_s=60)
        assert run.returncode == 0 and len(run.steps) == 1, run.output
        return run.steps[0]

    assert sarama("alter", "3,4") == {"ok": True, "codes": []}
    moved = wait_until(lambda: (lambda s: s if s["replicas"] == [3, 4] and not s["adding_replicas"] else None)(
        cluster.partition_state(topic_name, 0)), 60, message="the reassignment to complete")
    assert moved["leader"] == 3
    assert sarama("list") == {"ok": True, "codes": []}
    wait_until(lambda: identical_up_to_hw(cluster, topic_name, 0), 30, message="the new replicas to converge")
    assert watermark(cluster, topic_name, 0) > 0
    for gone in (1, 2):
        wait_until(lambda b=gone: not (cluster.brokers[b].log_dir / f"{topic_name}-0").exists(), 30,
                   message=f"broker {gone} to delete its removed replica")

    cluster.stop(2)  # (broker 1, the controller admin clients talk to, stays up)
    try:
        assert sarama("alter", "3,4,2") == {"ok": True, "codes": []}
        listed = sarama("list")
        assert listed["reassignments"] == {"0": {"replicas": [3, 4, 2], "adding": [2], "removing": []}}, listed
        refused = sarama("alter", "3,9")
        assert (refused["ok"], refused["codes"]) == (False, [INVALID_REPLICA_ASSIGNMENT]), refused
        unknown = sarama("alter", "1,2", topic=f"{topic_name}-missing")
        assert (unknown["ok"], unknown["codes"]) == (False, [UNKNOWN_TOPIC_OR_PARTITION]), unknown
        assert sarama("cancel") == {"ok": True, "codes": []}
        assert sarama("list") == {"ok": True, "codes": []}
        nothing = sarama("cancel")
        assert (nothing["ok"], nothing["codes"]) == (False, [NO_REASSIGNMENT_IN_PROGRESS]), nothing
        state = cluster.partition_state(topic_name, 0)
        assert (state["replicas"], state["adding_replicas"], state["removing_replicas"]) == ([3, 4], [], [])
    finally:
        cluster.start(2)


THROTTLE = 2_000_000
"""bytes/s: issue 13's 2 MB/s."""
THROTTLED_BYTES = 12_000_000


def log_bytes(directory) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.log")) if directory.exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize("side", ["follower", "leader"])
def test_a_throttled_new_replica_copies_at_the_throttle_rate(four_brokers, topic_name, side):
    """Kafka's throttle configs, set as kafka-reassign-partitions --throttle does, bound the copy to a new
    replica; the rate is measured from its log's growth on disk, between 10 % and 90 % of the data. Only one
    side's rate is set, so each side is shown to hold the rate on its own."""
    cluster = four_brokers
    cluster.create_topic(topic_name, assignments=[[1, 2]])
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
    for _ in range(THROTTLED_BYTES // 10_000):
        producer.produce(topic_name, b"x" * 10_000, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    del producer  # librdkafka would keep reconnecting to the brokers after the module's cluster stops
    status, body = cluster.plane.call("POST", f"/internal/v1/topics/{topic_name}/configs", {"set": {
        "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:3"}})
    assert status == 200, body
    unthrottled = {"leader": "follower", "follower": "leader"}[side]
    status, body = cluster.plane.call("POST", "/internal/v1/brokers/configs", {
        "broker_ids": [1, 2, 3], "set": {f"{side}.replication.throttled.rate": THROTTLE},
        "delete": [f"{unthrottled}.replication.throttled.rate"]})
    assert status == 200, body
    copy = cluster.brokers[3].log_dir / f"{topic_name}-0"
    total = log_bytes(cluster.brokers[1].log_dir / f"{topic_name}-0")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        assert admin.alter_partition_reassignments({TopicPartition(topic_name, 0): [1, 2, 3]}) == {
            TopicPartition(topic_name, 0): None}
        samples = []
        wait_until(lambda: samples.append((time.monotonic(), log_bytes(copy))) or samples[-1][1] >= total, 60,
                   interval_s=0.05, message="the new replica to copy the log")
    finally:
        admin.close()
    start = next(s for s in samples if s[1] >= total * 0.1)
    end = next(s for s in samples if s[1] >= total * 0.9)
    measured = (end[1] - start[1]) / (end[0] - start[0])
    print(f"\n{side}-throttled copy: {measured / 1e6:.2f} MB/s measured for a {THROTTLE / 1e6:.0f} MB/s throttle "
          f"({total / 1e6:.1f} MB, {(end[0] - start[0]):.1f} s between 10 % and 90 %)")
    assert THROTTLE * 0.85 <= measured <= THROTTLE * 1.15
    wait_until(lambda: not cluster.partition_state(topic_name, 0)["adding_replicas"], 30,
               message="the reassignment to complete")  # (replicas are [1, 2, 3] while it runs, too)
    image = cluster.plane.metadata()  # completion released the throttles
    assert image["broker_configs"] == {}
    assert next(t["configs"] for t in image["topics"] if t["name"] == topic_name) == {}
