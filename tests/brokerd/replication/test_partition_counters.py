"""Per-batch counting at the partition boundary: bytes and records from batch headers, once per batch;
rejected batches; appends refused for not leading are not counted; follower appends are replication bytes."""

import pytest

from brokerd.counters import TopicCounters
from brokerd.records.errors import CorruptRecordError
from brokerd.replication.errors import NotLeaderOrFollowerError
from brokerd.storage import read_bytes
from tests.brokerd.replication.conftest import assignment, build_batch


def test_leader_appends_count_batch_bytes_and_records_once_per_batch(make_partition):
    counters = TopicCounters()
    partition = make_partition(1)
    partition.counters = counters
    partition.make_leader(assignment(1, 0), now_ms=0)
    batches = [build_batch(5), build_batch(1), build_batch(100)]
    for batch in batches:
        partition.append_as_leader(batch)
    assert counters.bytes_in == sum(len(b) for b in batches)
    assert counters.messages_in == 106
    assert counters.produce_requests == 3
    assert (counters.failed_produce_requests, counters.bytes_rejected) == (0, 0)


def test_rejected_batches_count_as_failed_and_rejected_bytes(make_partition):
    partition = make_partition(1)
    partition.counters = TopicCounters()
    partition.make_leader(assignment(1, 0), now_ms=0)
    good = build_batch(2)
    truncated = build_batch(3)[:-4]
    partition.append_as_leader(good)
    with pytest.raises(CorruptRecordError):
        partition.append_as_leader(truncated)
    counters = partition.counters
    assert (counters.produce_requests, counters.failed_produce_requests) == (2, 1)
    assert counters.bytes_rejected == len(truncated)
    assert (counters.bytes_in, counters.messages_in) == (len(good), 2)


def test_appends_refused_for_not_leading_are_not_counted(make_partition):
    partition = make_partition(2)
    partition.counters = TopicCounters()
    partition.make_follower(assignment(1, 0))
    with pytest.raises(NotLeaderOrFollowerError):
        partition.append_as_leader(build_batch())
    assert partition.counters.values() == TopicCounters().values()


def test_follower_appends_count_replication_bytes_in(make_partition):
    leader = make_partition(1)
    leader.make_leader(assignment(1, 0), now_ms=0)
    for count in (3, 4):
        leader.append_as_leader(build_batch(count))
    follower = make_partition(2)
    follower.counters = TopicCounters()
    follower.make_follower(assignment(1, 0))
    fetched = memoryview(read_bytes(leader.read(0, 1 << 20, up_to_log_end=True)))
    follower.append_as_follower(fetched, leader_high_watermark=0, leader_log_start_offset=0)
    assert follower.counters.replication_bytes_in == len(fetched)
    assert (follower.counters.bytes_in, follower.counters.messages_in) == (0, 0)


def test_without_counters_nothing_is_counted_and_appends_work(make_partition):
    partition = make_partition(1)  # strom.metrics.enable=false: the replica manager hands out no counters
    partition.make_leader(assignment(1, 0), now_ms=0)
    assert partition.counters is None
    assert partition.append_as_leader(build_batch(3)).last_offset == 2
