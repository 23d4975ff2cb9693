"""`Log` against an oracle: the list of batches appended so far.

The property test drives random appends, rolls, clean and unclean reopenings, truncations, DeleteRecords
and retention, and after every step checks reads by offset, reads bounded by a high watermark and
max_bytes, timestamp lookups and the log offsets against the oracle.
"""

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.clock import ManualClock
from brokerd.records.errors import CorruptRecordError, InvalidRecordError
from brokerd.storage import LogManager
from brokerd.storage.errors import (
    InvalidTimestampError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)

from .conftest import build_batch, decode  # noqa: TID252

T0 = 1_700_000_000_000

ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 12), st.integers(0, 250), st.integers(-5000, 5000)),
        st.tuples(st.just("roll")),
        st.tuples(st.just("reopen"), st.booleans()),
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("delete_records"), st.floats(0, 1)),
        st.tuples(st.just("retention"), st.integers(0, 6000)),
    ),
    min_size=1, max_size=25,
)


class Oracle:
    def __init__(self) -> None:
        self.batches: list[tuple[int, list[tuple[int, bytes, bytes, int]]]] = []
        self.log_start_offset = 0

    @property
    def log_end_offset(self) -> int:
        return self.batches[-1][1][-1][0] + 1 if self.batches else self.next_offset

    next_offset = 0

    def records(self):
        return [r for _, records in self.batches for r in records if r[0] >= self.log_start_offset]


def check_against(log, oracle: Oracle) -> None:
    assert log.log_end_offset == oracle.log_end_offset
    assert log.log_start_offset == oracle.log_start_offset
    records = oracle.records()
    # Read everything, batch region by batch region, with small max_bytes: at least one batch each time.
    seen, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        region = log.read(offset, 1, log.log_end_offset)
        batches = decode(log.read_bytes(region))
        assert len(batches) == 1, "a tiny max_bytes still returns exactly one whole batch"
        seen += [r for r in batches[0][1] if r[0] >= offset]
        offset = batches[0][1][-1][0] + 1
    assert seen == records
    # Reads bounded by a high watermark (a batch boundary) stop right before it.
    for _, batch in oracle.batches[:: max(1, len(oracle.batches) // 7)]:
        bound = batch[-1][0] + 1
        if bound <= log.log_start_offset:
            continue
        region = log.read(log.log_start_offset, 1 << 20, bound)
        got = [r for _, rs in decode(log.read_bytes(region)) for r in rs if r[0] >= log.log_start_offset]
        assert got and got == [r for r in records if r[0] < bound][: len(got)], "a prefix of one segment"
    assert log.read(log.log_end_offset, 1 << 20, log.log_end_offset).length == 0
    # Timestamp lookups: the first record (in offset order) whose timestamp >= target.
    for target in {T0 - 6000, T0, T0 + 2500, T0 + 6000, *(r[3] for r in records[:5])}:
        expected = next(((r[0], r[3]) for r in records if r[3] >= target), None)
        assert log.offset_for_timestamp(target) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops_strategy)
def test_log_matches_oracle(ops):
    clock = ManualClock(now_ms=T0)
    with tempfile.TemporaryDirectory() as tmp:
        defaults = {"segment.bytes": 4000, "index.interval.bytes": 200, "retention.ms": -1,
                    "file.delete.delay.ms": 0}
        manager = LogManager([Path(tmp)], defaults, clock, max_open_files=4)
        manager.startup()
        log = manager.get_or_create_log("t", 0, {})
        oracle = Oracle()
        for op in ops:
            if op[0] == "append":
                _, count, size, skew = op
                base = log.log_end_offset
                records = [(b"k%d" % i, bytes([i % 251]) * size, T0 + skew + i) for i in range(count)]
                info = log.append_as_leader(build_batch(records), leader_epoch=3)
                assert (info.first_offset, info.last_offset) == (base, base + count - 1)
                oracle.batches.append((base, [(base + i, k, v, ts) for i, (k, v, ts) in enumerate(records)]))
            elif op[0] == "roll":
                log.roll()
            elif op[0] == "reopen":
                if op[1]:
                    manager.shutdown()
                else:
                    manager.write_checkpoints()  # a crash: no flush, no marker
                    manager.handles.clear()
                manager = LogManager([Path(tmp)], defaults, clock, max_open_files=4)
                manager.startup()
                log = manager.get_log("t", 0)
            elif op[0] == "truncate":
                target = oracle.log_start_offset + int(op[1] * (oracle.log_end_offset - oracle.log_start_offset))
                log.truncate_to(target)
                oracle.batches = [b for b in oracle.batches if b[1][-1][0] < target]
                if not oracle.batches:
                    oracle.next_offset = log.log_end_offset
                oracle.log_start_offset = min(oracle.log_start_offset, oracle.log_end_offset)
            elif op[0] == "delete_records":
                target = oracle.log_start_offset + int(op[1] * (oracle.log_end_offset - oracle.log_start_offset))
                assert log.delete_records_before(target) == max(target, oracle.log_start_offset)
                oracle.log_start_offset = max(target, oracle.log_start_offset)
            elif op[0] == "retention":
                log.config = log.config.__class__(**{**_fields(log.config), "retention_ms": op[1]})
                log.delete_old_segments(T0 + 5000)
                oracle.log_start_offset = log.log_start_offset
            assert log.log_start_offset >= oracle.log_start_offset
            oracle.log_start_offset = log.log_start_offset
            check_against(log, oracle)
        manager.shutdown()


def _fields(config):
    return {name: getattr(config, name) for name in config.__slots__}


@pytest.fixture
def log(manager_factory):
    return manager_factory().get_or_create_log("t", 0, {"segment.bytes": "4096"})


def test_rejections_leave_the_log_unchanged(log, clock):
    good = build_batch([(b"k", b"v", clock.now_ms())])
    log.append_as_leader(bytearray(good), 0)
    before = (log.log_end_offset, log.active_segment.size)

    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    torn = good[:-5]
    wrong_count = bytearray(good)
    wrong_count[57:61] = (2).to_bytes(4, "big")
    cases = [
        (good + corrupt, CorruptRecordError),
        (torn, CorruptRecordError),
        (bytearray(good[:16]) + b"\x01" + good[17:], InvalidRecordError),
        (wrong_count, CorruptRecordError),
        (build_batch([(b"k", b"x" * 5000, 1)]), RecordListTooLargeError),
        (bytearray(), InvalidRecordError),
    ]
    for buf, error in cases:
        with pytest.raises(error):
            log.append_as_leader(buf, 0)
        assert (log.log_end_offset, log.active_segment.size) == before
    log.config = log.config.__class__(**{**_fields(log.config), "max_message_bytes": 100})
    with pytest.raises(MessageTooLargeError) as raised:
        log.append_as_leader(build_batch([(b"k", b"x" * 200, 1)]), 0)
    assert raised.value.kafka_error == "MESSAGE_TOO_LARGE"
    assert (log.log_end_offset, log.active_segment.size) == before


def test_compacted_topic_needs_keys_and_timestamps_are_bounded(manager_factory, clock):
    manager = manager_factory()
    compacted = manager.get_or_create_log("c", 0, {"cleanup.policy": "compact"})
    with pytest.raises(InvalidRecordError):
        compacted.append_as_leader(build_batch([(b"k", b"v", 1), (None, b"v", 1)]), 0)
    assert compacted.append_as_leader(build_batch([(b"k", b"v", 1)]), 0).last_offset == 0
    bounded = manager.get_or_create_log("b", 0, {"message.timestamp.before.max.ms": "1000"})
    with pytest.raises(InvalidTimestampError):
        bounded.append_as_leader(build_batch([(b"k", b"v", clock.now_ms() - 5000)]), 0)
    assert bounded.append_as_leader(build_batch([(b"k", b"v", clock.now_ms())]), 0).record_count == 1


def test_log_append_time_stamps_broker_time(manager_factory, clock):
    log = manager_factory().get_or_create_log("a", 0, {"message.timestamp.type": "LogAppendTime"})
    info = log.append_as_leader(build_batch([(b"k", b"v", 5), (b"k", b"w", 6)]), 2)
    assert info.log_append_time_ms == clock.now_ms()
    [(base, records)] = decode(log.read_bytes(log.read(0, 1 << 20, 2)))
    assert [r[3] for r in records] == [clock.now_ms()] * 2
    assert log.offset_for_timestamp(clock.now_ms()) == (0, clock.now_ms())


def test_read_bounds_and_out_of_range(log, clock):
    for _ in range(10):
        log.append_as_leader(build_batch([(b"k", b"v" * 100, clock.now_ms())] * 3), 0)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(31, 100, 30)
    log.delete_records_before(7)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100, 30)
    first = decode(log.read_bytes(log.read(7, 1, 30)))
    assert [b for b, _ in first] == [6], "the batch holding the log start offset is returned whole"
    assert log.read(7, 1 << 20, 6).length == 0
    region = log.read(7, 1 << 20, 12)
    assert [b for b, _ in decode(log.read_bytes(region))] == [6, 9]


def test_region_survives_retention(manager_factory, clock):
    manager = manager_factory(defaults={"segment.bytes": 300, "retention.ms": 1000, "file.delete.delay.ms": 0})
    log = manager.get_or_create_log("r", 0)
    for _ in range(5):
        log.append_as_leader(build_batch([(b"k", b"v" * 150, clock.now_ms())]), 0)
    region = log.read(0, 1 << 20, log.log_end_offset)
    expected = log.read_bytes(region)
    clock.advance_ms(5000)
    manager.run_maintenance(clock.now_ms())
    assert log.log_start_offset == 4 and len(log.segments()) == 1
    assert not list(log.dir.glob("*.deleted"))
    assert log.read_bytes(region) == expected and decode(expected)[0][0] == 0


def test_retention_bytes_and_delayed_file_deletion(manager_factory, clock):
    manager = manager_factory(defaults={"segment.bytes": 300, "retention.bytes": 600, "retention.ms": -1})
    log = manager.get_or_create_log("r", 0)
    for _ in range(6):
        log.append_as_leader(build_batch([(b"k", b"v" * 150, clock.now_ms())]), 0)
    manager.run_maintenance(clock.now_ms())
    assert log.size_in_bytes() <= 600 + log.active_segment.size
    assert log.log_start_offset == log.segments()[0].base_offset > 0
    assert list(log.dir.glob("*.log.deleted")), "files wait for file.delete.delay.ms"
    clock.advance_ms(60_000)
    manager.run_maintenance(clock.now_ms())
    assert not list(log.dir.glob("*.deleted"))


def test_follower_append_stores_verbatim_and_tracks_epochs(manager_factory, clock):
    manager = manager_factory()
    leader = manager.get_or_create_log("l", 0)
    follower = manager.get_or_create_log("f", 0)
    leader.append_as_leader(build_batch([(b"k", b"v", clock.now_ms())] * 2), 4)
    leader.append_as_leader(build_batch([(b"k", b"v", clock.now_ms())] * 3), 6)
    data = leader.read_bytes(leader.read(0, 1 << 20, leader.log_end_offset))
    follower.append_as_follower(data)
    assert follower.read_bytes(follower.read(0, 1 << 20, 5)) == data
    assert follower.leader_epoch_cache.entries() == [(4, 0), (6, 2)]
    assert follower.leader_epoch_cache.end_offset_for(5) == (4, 2)
    assert follower.leader_epoch_cache.end_offset_for(6) == (6, 5)
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(data)
    follower.truncate_to(3)
    assert follower.log_end_offset == 2 and follower.leader_epoch_cache.entries() == [(4, 0)]


def test_flush_messages_advances_the_recovery_point(manager_factory, clock):
    log = manager_factory().get_or_create_log("f", 0, {"flush.messages": "4"})
    log.append_as_leader(build_batch([(b"k", b"v", 1)] * 3), 0)
    assert log.recovery_point == 0
    log.append_as_leader(build_batch([(b"k", b"v", 1)] * 2), 0)
    assert log.recovery_point == 5
