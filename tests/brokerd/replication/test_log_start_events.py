"""A moved log start is an event for the fetch sessions: the partition is marked in every session holding it, so
the followers hear of it with their next fetch rather than when the (slow) periodic sweep comes round, whichever
thread moved it — DeleteRecords on the event loop, retention on the log maintenance thread. A real replica manager
and logs; the sessions as the leader's Fetch handler keeps them."""

import asyncio
import types

from brokerd.clock import ManualClock
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager
from brokerd.types import TopicPartition
from tests.brokerd.groups.stack import ScriptedMetadata
from tests.brokerd.storage.conftest import build_batch

TOPIC = "t"
KEY = TopicPartition(TOPIC, 0)
OTHER = TopicPartition(TOPIC, 1)
BROKERS = tuple(BrokerEndpoint(node, "127.0.0.1", 1) for node in (1, 2, 3))  # nothing listens: fetchers retry
DEFAULTS = {"segment.bytes": 400, "retention.ms": 60_000, "file.delete.delay.ms": 0}


def image() -> ClusterImage:
    partitions = tuple(PartitionAssignment(p, 1, 0, (1, 2, 3), (1,), 0) for p in (0, 1))  # HW moves with appends
    return ClusterImage("cluster", 1, BROKERS, {TOPIC: TopicMetadata(TOPIC, "00000000-0000-0000-0000-0000000000a1",
                                                                     partitions, {})})


def test_deleterecords_and_retention_mark_the_partition_in_the_followers_sessions(tmp_path):
    async def scenario():
        clock = ManualClock()
        logs = LogManager([tmp_path / "logs"], DEFAULTS, clock)
        logs.startup()
        replicas = ReplicaManager(logs, ScriptedMetadata(image()), node_id=1, clock=clock)
        replicas.start()
        try:
            partition = replicas.leader_partition(TOPIC, 0)
            for _ in range(6):  # a few segments
                await replicas.append(TOPIC, 0, build_batch([(b"k", b"v" * 150, clock.now_ms())]), 1, 1_000, 0)
            sessions = [replicas.fetch_sessions.create(follower) for follower in (2, 3)]
            for session in sessions:
                session.update([(TOPIC, [types.SimpleNamespace(partition=p, fetch_offset=0, partition_max_bytes=1024)
                                         for p in (0, 1)])], [])
                session.changed.clear()  # as a fetch that found both quiet leaves it

            partition.delete_records_before(2)  # DeleteRecords, on the loop
            await asyncio.sleep(0)  # one loop step: the sweep (a slice every 250 ms) cannot be what marks it
            assert [KEY in s.changed for s in sessions] == [True, True]
            assert all(OTHER not in s.changed for s in sessions)

            for session in sessions:
                session.changed.clear()
            clock.advance_ms(120_000)  # every closed segment past retention.ms
            await asyncio.to_thread(logs.run_maintenance, clock.now_ms())  # retention, on another thread
            assert partition.log_start_offset > 2
            assert [KEY in s.changed for s in sessions] == [True, True]  # marked before the thread's result came
            assert all(OTHER not in s.changed for s in sessions)
        finally:
            await replicas.stop()
        logs.get_log(TOPIC, 0).delete_records_before(logs.get_log(TOPIC, 0).log_end_offset)  # stopped: no listener
        logs.shutdown()

    asyncio.run(scenario())
