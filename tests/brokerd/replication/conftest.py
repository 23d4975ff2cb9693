"""Partitions over real logs in a temporary directory, a recording listener (the replica manager's side),
and record batches built by kafka-python (the oracle encoder)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from brokerd.clock import ManualClock
from brokerd.metadata.image import PartitionAssignment
from brokerd.replication.partition import Partition
from brokerd.storage import LogManager

TOPIC = "t"
TIMESTAMP_MS = 1_700_000_000_000


def build_batch(count: int = 1, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                value: bytes = b"v") -> bytearray:
    """One uncompressed batch of `count` records; idempotent when `producer_id` is given."""
    builder = DefaultRecordBatchBuilder(2, 0, False, producer_id, producer_epoch, base_sequence, 1 << 30)
    for delta in range(count):
        builder.append(delta, TIMESTAMP_MS + delta, None, value + str(delta).encode(), [])
    return bytearray(builder.build())


def assignment(leader: int, epoch: int, replicas=(1, 2, 3), isr=None, partition_epoch: int | None = None
               ) -> PartitionAssignment:
    return PartitionAssignment(partition=0, leader_id=leader, leader_epoch=epoch, replicas=tuple(replicas),
                               isr=tuple(replicas if isr is None else isr),
                               partition_epoch=epoch if partition_epoch is None else partition_epoch)


@dataclass
class RecordingListener:
    """What the replica manager would be told: appends and high-watermark moves, in order."""

    appends: int = 0
    high_watermarks: list[int] = field(default_factory=list)

    def on_append(self, partition: Partition) -> None:
        self.appends += 1

    def on_high_watermark(self, partition: Partition) -> None:
        self.high_watermarks.append(partition.high_watermark)

    def on_leader_state(self, partition: Partition) -> None:
        pass


@pytest.fixture
def listener() -> RecordingListener:
    return RecordingListener()


@pytest.fixture
def make_partition(tmp_path: Path, listener: RecordingListener) -> Iterator[Callable[..., Partition]]:
    """make_partition(node_id, directory="node<id>", index=0) -> a Partition of t-<index> over its own log
    directory."""
    managers: list[LogManager] = []

    def make(node_id: int = 1, directory: str | None = None, index: int = 0) -> Partition:
        directory = directory or f"node{node_id}" + (f"-{index}" if index else "")
        manager = LogManager([tmp_path / directory], {}, ManualClock())
        manager.startup()
        managers.append(manager)
        return Partition(TOPIC, index, node_id, manager.get_or_create_log(TOPIC, index), listener)

    yield make
    for manager in managers:
        manager.shutdown()
