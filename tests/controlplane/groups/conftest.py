"""A fake of the Kafka-client layer (`controlplane.groups.kafka_client.KafkaGroupAdmin`): an in-memory cluster
with logs (log start, record timestamps), groups and committed offsets, answering as a Kafka cluster would.
And, for the tests against the real thing, a standalone broker per module and fresh topic/group names."""

import uuid
from dataclasses import dataclass, field

import pytest

from controlplane.core.errors import KafkaApiError
from controlplane.groups import kafka_client
from controlplane.groups.kafka_client import EARLIEST, LATEST, GroupDescription, GroupListing, Member, TopicPartition
from controlplane.groups.services import GroupService
from tests.controlplane.groups.real_cluster import BROKER_OVERRIDES
from tests.support.broker import standalone_broker

NOW_MS = 1_700_000_000_000


@dataclass
class FakeLog:
    log_start: int
    timestamps: list[int]  # record timestamp (ms) of every offset from log_start on

    @property
    def log_end(self) -> int:
        return self.log_start + len(self.timestamps)


@dataclass
class FakeGroupAdmin:
    logs: dict[TopicPartition, FakeLog] = field(default_factory=dict)
    groups: dict[str, GroupDescription] = field(default_factory=dict)
    committed: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    unreachable: bool = False

    def add_topic(self, topic: str, *logs: FakeLog) -> None:
        for partition, log in enumerate(logs):
            self.logs[TopicPartition(topic, partition)] = log

    def add_group(self, group_id: str, state: str = "Empty", members: tuple[Member, ...] = (),
                  committed: dict[TopicPartition, int] | None = None) -> None:
        self.groups[group_id] = GroupDescription(group_id, state, "consumer", "range" if members else "", 1, members)
        self.committed[group_id] = dict(committed or {})

    def _check_reachable(self) -> None:
        if self.unreachable:
            raise KafkaApiError("BROKER_NOT_AVAILABLE", "the Kafka cluster at fake:9092 did not answer", 503)

    def list_groups(self) -> list[GroupListing]:
        self._check_reachable()
        return [GroupListing(g, "consumer") for g in self.groups]

    def describe_groups(self, group_ids) -> dict[str, GroupDescription]:
        self._check_reachable()
        return {g: self.groups.get(g, GroupDescription(g, "Dead", "", "", None, ())) for g in group_ids}

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        self._check_reachable()
        return dict(self.committed.get(group_id, {}))

    def alter_offsets(self, group_id: str, offsets) -> None:
        self._check_reachable()
        if group_id not in self.groups:  # Kafka creates the group (Empty) on its first commit
            self.add_group(group_id)
        self.committed[group_id].update(offsets)

    def delete_group(self, group_id: str) -> None:
        self._check_reachable()
        if group_id not in self.groups:
            raise KafkaApiError("GROUP_ID_NOT_FOUND", f"Consumer group '{group_id}' does not exist.", 404)
        if self.groups[group_id].members:
            raise KafkaApiError("NON_EMPTY_GROUP", "the group has active members", 409)
        del self.groups[group_id], self.committed[group_id]

    def list_offsets(self, partitions, query):
        self._check_reachable()
        offsets, errors = {}, {}
        for tp in partitions:
            if (log := self.logs.get(tp)) is None:
                errors[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif query == EARLIEST:
                offsets[tp] = log.log_start
            elif query == LATEST:
                offsets[tp] = log.log_end
            else:
                offsets[tp] = next((log.log_start + i for i, ts in enumerate(log.timestamps) if ts >= query), -1)
        return offsets, errors

    def topic_partitions(self, topics) -> dict[str, list[int]]:
        self._check_reachable()
        found: dict[str, list[int]] = {}
        for tp in sorted(self.logs):
            if tp.topic in topics:
                found.setdefault(tp.topic, []).append(tp.partition)
        return found


@pytest.fixture
def fake_admin() -> FakeGroupAdmin:
    return FakeGroupAdmin()


@pytest.fixture
def service(fake_admin, db) -> GroupService:
    return GroupService(fake_admin, now_ms=lambda: NOW_MS)


@pytest.fixture
def connected_to_fake(fake_admin, monkeypatch) -> FakeGroupAdmin:
    """Views, commands and console pages connect to the fake cluster."""
    monkeypatch.setattr(kafka_client, "connect", lambda: fake_admin)
    return fake_admin


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A real `python -m brokerd --standalone` with its group coordinator."""
    with standalone_broker(tmp_path_factory.mktemp("broker"), BROKER_OVERRIDES) as running:
        yield running


@pytest.fixture
def names(request) -> tuple[str, str]:
    """A fresh (topic, group) per test."""
    suffix = uuid.uuid4().hex[:8]
    return f"{request.node.name[:30]}-{suffix}", f"group-{suffix}"
