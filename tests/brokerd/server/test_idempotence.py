"""Idempotent produce through the partition facade over a real LogManager: duplicates are acknowledged
with their original offsets and not re-appended; gaps and fenced epochs are refused."""

import asyncio
import struct

import pytest
from crc32c import crc32c

from brokerd.clock import ManualClock
from brokerd.metadata.image import BrokerEndpoint, NewTopic
from brokerd.metadata.standalone import StandaloneMetadataStore
from brokerd.metadata.validation import TopicDefaults
from brokerd.replication.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager

HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")


def batch(producer_id: int, epoch: int, base_sequence: int, count: int = 2) -> bytes:
    """A minimal uncompressed v2 batch of `count` empty records (valid CRC)."""
    # Record: length 6 | attributes 0 | timestampDelta 0 | offsetDelta i | key null | value null | 0 headers
    records = b"".join(bytes([12, 0, 0, 2 * i, 1, 1, 0]) for i in range(count))
    body = HEADER_AFTER_CRC.pack(0, count - 1, 1_700_000_000_000, 1_700_000_000_000, producer_id, epoch,
                                 base_sequence, count) + records
    crc = crc32c(body)
    head = struct.pack(">qiibI", 0, 4 + 1 + 4 + len(body), -1, 2, crc)
    return head + body


def test_duplicates_gaps_and_fencing(tmp_path):
    async def scenario():
        log_manager = LogManager(log_dirs=[tmp_path / "logs"], cluster_defaults={}, clock=ManualClock())
        log_manager.startup()
        store = StandaloneMetadataStore(tmp_path / "meta.json", BrokerEndpoint(1, "127.0.0.1", 9092),
                                        TopicDefaults())
        store.open()
        await store.create_topic(NewTopic("t", 1, 1, {}))
        replicas = ReplicaManager(log_manager, store, node_id=1, clock=ManualClock())
        replicas.start()
        part = replicas.leader_partition("t", 0)
        try:
            assert part.append_as_leader(batch(5, 0, 0)).base_offset == 0
            assert part.append_as_leader(batch(5, 0, 2)).base_offset == 2
            assert part.append_as_leader(batch(5, 0, 0)).base_offset == 0  # retried: original offsets
            assert part.log_end_offset == 4
            with pytest.raises(OutOfOrderSequenceError):
                part.append_as_leader(batch(5, 0, 7))
            with pytest.raises(OutOfOrderSequenceError):
                part.append_as_leader(batch(6, 0, 3))  # a new producer starts at 0
            assert part.append_as_leader(batch(5, 1, 0)).base_offset == 4  # bumped epoch restarts sequences
            with pytest.raises(InvalidProducerEpochError):
                part.append_as_leader(batch(5, 0, 4))
            assert part.append_as_leader(batch(-1, -1, -1)).base_offset == 6  # not idempotent: always appended
            assert part.log_end_offset == 8
        finally:
            await replicas.stop()
            log_manager.shutdown()

    asyncio.run(scenario())
