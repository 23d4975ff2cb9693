"""The test side of `consumer_worker`: group members as subprocesses whose reports (assignment, records,
each stamped with `time.monotonic()` on arrival) are collected by one reader thread per process; and a
producer thread writing "partition-sequence" values round-robin over a topic's partitions."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker import REPO_ROOT
from tests.support.polling import wait_until


@dataclass
class Received:
    partition: int
    offset: int
    value: str
    at: float


@dataclass
class Member:
    name: str
    process: subprocess.Popen
    assignment: list[int] | None = None
    assigned_at: float = 0.0
    records: list[Received] = field(default_factory=list)
    rebalance_callbacks: list[str] = field(default_factory=list)
    """"assign"/"revoke", in order (confluent-kafka members only)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            now = time.monotonic()
            with self.lock:
                if "assignment" in message:
                    self.assignment, self.assigned_at = message["assignment"], now
                elif "rebalance" in message:
                    self.rebalance_callbacks.append(message["rebalance"])
                else:
                    self.records += [Received(p, o, v, now) for p, o, v in message["records"]]

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()


class ConsumerGroup:
    """`count` members of `group` on `topic`, started at once; stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, assignor: str, session_ms: int,
                 count: int, log_dir, static: bool = False) -> None:
        """`static`: member i has `group.instance.id` "member-i" (confluent-kafka)."""
        self._argv = [sys.executable, "-m", "tests.integration.groups.consumer_worker", client, bootstrap, group,
                      topic, assignor, str(session_ms)]
        self._log_dir = log_dir
        self._group = group
        self.members = [self._spawn(i, static) for i in range(count)]

    def _spawn(self, index: int, static: bool) -> Member:
        stderr = open(self._log_dir / f"{self._group}-{index}.log", "ab")  # noqa: SIM115 - closed below
        process = subprocess.Popen(self._argv + ([f"member-{index}"] if static else []), cwd=REPO_ROOT,
                                   stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        stderr.close()
        member = Member(f"{self._group}-{index}", process)
        threading.Thread(target=member.read, daemon=True, name=member.name).start()
        return member

    def restart(self, index: int, static: bool) -> Member:
        """Stop member `index` (SIGTERM: a clean close) and start it again."""
        old = self.members[index]
        old.process.send_signal(signal.SIGTERM)
        old.process.wait(20)
        self.members[index] = self._spawn(index, static)
        return self.members[index]

    def __enter__(self) -> "ConsumerGroup":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        for member in self.members:
            if member.alive:
                member.process.send_signal(signal.SIGTERM)
        for member in self.members:
            try:
                member.process.wait(20)
            except subprocess.TimeoutExpired:
                member.kill()

    @property
    def alive(self) -> list[Member]:
        return [m for m in self.members if m.alive]

    def assignments(self, members: list[Member] | None = None) -> dict[str, list[int]]:
        return {m.name: list(m.assignment or ()) for m in (members or self.alive)}

    def wait_for_full_assignment(self, partitions: int, members: list[Member] | None = None,
                                 timeout_s: float = 60.0) -> dict[str, list[int]]:
        """Every partition owned by exactly one of `members` (default: the live ones), each owning some."""
        def full() -> dict[str, list[int]] | None:
            current = self.assignments(members)
            owned = Counter(p for assigned in current.values() for p in assigned)
            if sorted(owned) == list(range(partitions)) and set(owned.values()) == {1} and all(current.values()):
                return current
            return None

        for member in members or self.members:
            if not member.alive:
                raise AssertionError(f"{member.name} exited with {member.process.returncode}")
        return wait_until(full, timeout_s, interval_s=0.01, message=f"a full assignment of {partitions} partitions, "
                                                                       f"now {self.assignments(members)}")

    def received(self) -> list[Received]:
        records = []
        for member in self.members:
            with member.lock:
                records += member.records
        return records


@dataclass
class ProducerThread:
    """Writes "partition-sequence" values round-robin to `partitions` partitions (acks=all, idempotent) at about
    `rate_per_s`; `acked` holds (partition, offset, value) of every delivered record."""

    bootstrap: str
    topic: str
    partitions: int
    rate_per_s: float = 200.0
    acked: list[tuple[int, int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "ProducerThread":
        self._thread = threading.Thread(target=self._run, daemon=True, name="producer")
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, "topic.metadata.refresh.interval.ms": 500, "retry.backoff.max.ms": 200,
                             "reconnect.backoff.max.ms": 200, "message.timeout.ms": 120_000})

        def delivered(err, message) -> None:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked.append((message.partition(), message.offset(), message.value().decode()))

        sequence = 0
        started = time.monotonic()
        while not self._stop.is_set():
            partition = sequence % self.partitions
            producer.produce(self.topic, f"{partition}-{sequence}".encode(), partition=partition, on_delivery=delivered)
            sequence += 1
            producer.poll(0)
            delay = started + sequence / self.rate_per_s - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
        producer.flush(120)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def produce(bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple[int, int, str]]:
    """`count` records round-robin over the partitions; (partition, offset, value) of each, all acknowledged."""
    acked: list[tuple[int, int, str]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"{i % partitions}-{i}".encode(), partition=i % partitions,
                         on_delivery=lambda err, m: acked.append((m.partition(), m.offset(), m.value().decode()))
                         if err is None else None)
    assert producer.flush(30) == 0
    assert len(acked) == count
    return acked


def create_topic(bootstrap: str, name: str, partitions: int, replication_factor: int = 1) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})  # must outlive its futures
    client.create_topics([NewTopic(name, partitions, replication_factor)])[name].result(30)
