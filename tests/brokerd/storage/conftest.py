"""Shared fixtures of the storage tests: a manual clock, batch builders (kafka-python is the oracle
encoder), a decoder of read results, and a LogManager factory that shuts its managers down."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from brokerd.clock import ManualClock
from brokerd.storage import LogManager

Record = tuple[bytes | None, bytes | None, int]
"""(key, value, timestamp_ms) as the tests write them."""


def build_batch(records: list[Record], codec: int = 0) -> bytearray:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 30)
    for delta, (key, value, timestamp) in enumerate(records):
        builder.append(delta, timestamp, key, value, [])
    return bytearray(builder.build())


def decode(data: bytes) -> list[tuple[int, list[tuple[int, bytes | None, bytes | None, int]]]]:
    """[(base_offset, [(offset, key, value, timestamp)])] for the whole batches in `data`, CRC-checked."""
    out = []
    records = MemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        out.append((batch.base_offset, [(r.offset, r.key, r.value, r.timestamp) for r in batch]))
    return out


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def batch_builder() -> Callable[..., bytearray]:
    return build_batch


@pytest.fixture
def decode_batches() -> Callable[[bytes], list]:
    return decode


@pytest.fixture
def manager_factory(tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., LogManager]]:
    managers: list[LogManager] = []

    def make(dirs: list[Path] | None = None, defaults: dict | None = None, **kwargs) -> LogManager:
        manager = LogManager(dirs or [tmp_path / "data"], defaults or {}, clock, **kwargs)
        manager.startup()
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        manager.shutdown()
