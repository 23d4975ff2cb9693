"""Compaction against an oracle: the last record per key survives at its original offset, tombstones go
after delete.retention.ms, the active segment and young segments are left alone."""

import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.clock import ManualClock
from brokerd.storage import LogManager

from .conftest import build_batch, decode  # noqa: TID252

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "600", "min.cleanable.dirty.ratio": "0.01",
           "delete.retention.ms": "1000", "file.delete.delay.ms": "0"}


def read_all(log) -> list:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        batches = decode(log.read_bytes(log.read(offset, 1 << 20, log.log_end_offset)))
        if not batches:
            break
        out += [r for _, records in batches for r in records if r[0] >= offset]
        offset = batches[-1][1][-1][0] + 1
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes=st.lists(st.tuples(st.integers(0, 6), st.booleans(), st.integers(1, 4)), min_size=1, max_size=40))
def test_compaction_keeps_the_latest_value_per_key(writes):
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as tmp:
        manager = LogManager([Path(tmp)], {}, clock, max_open_files=8)
        manager.startup()
        check_compaction(manager, clock, writes)
        manager.shutdown()


def check_compaction(manager, clock, writes):
    log = manager.get_or_create_log("c", 0, COMPACT)
    appended = []
    for key, tombstone, count in writes:
        records = [(b"key%d" % key, None if tombstone else b"value%d" % len(appended), clock.now_ms())] * count
        info = log.append_as_leader(build_batch(records), 0)
        appended += [(info.first_offset + i, *records[i]) for i in range(count)]
    before = read_all(log)
    active_base = log.active_segment.base_offset
    manager.cleaner.maybe_clean(log, clock.now_ms())
    after = read_all(log)
    latest, latest_cleanable = {}, {}
    for offset, key, _, _ in appended:
        latest[key] = offset
        if offset < active_base:
            latest_cleanable[key] = offset
    assert set(after) <= set(before), "records keep their offsets and contents"
    for record in before:
        offset, key, value, _ = record
        keep = offset >= active_base or latest_cleanable[key] == offset
        assert (record in after) == keep
    clock.advance_ms(2000)
    manager.cleaner.maybe_clean(log, clock.now_ms()) or log.roll()
    log.append_as_leader(build_batch([(b"other", b"x", clock.now_ms())]), 0)
    log.roll()
    manager.cleaner.maybe_clean(log, clock.now_ms())
    final = read_all(log)
    survivors = {r[1]: r for r in final}
    for key, offset in latest.items():
        value = next(r[2] for r in before if r[0] == offset)
        assert (key in survivors) == (value is not None), "expired tombstones go, live values stay"


def test_min_compaction_lag_and_dirty_ratio_hold_cleaning_back(manager_factory, clock):
    manager = manager_factory()
    log = manager.get_or_create_log("lag", 0, {**COMPACT, "min.compaction.lag.ms": "10000"})
    for _ in range(30):
        log.append_as_leader(build_batch([(b"same", b"v" * 100, clock.now_ms())]), 0)
    assert not manager.cleaner.maybe_clean(log, clock.now_ms())
    clock.advance_ms(20_000)
    assert manager.cleaner.maybe_clean(log, clock.now_ms())
    assert len(read_all(log)) < 30
    assert not manager.cleaner.maybe_clean(log, clock.now_ms()), "nothing dirty is left"
    lazy = manager.get_or_create_log("ratio", 0, {**COMPACT, "min.cleanable.dirty.ratio": "0.99"})
    for i in range(30):
        lazy.append_as_leader(build_batch([(b"k%d" % i, b"v" * 100, clock.now_ms())]), 0)
    manager.cleaner.maybe_clean(lazy, clock.now_ms())
    for _ in range(3):
        lazy.append_as_leader(build_batch([(b"k0", b"v" * 100, clock.now_ms())]), 0)
    assert not manager.cleaner.maybe_clean(lazy, clock.now_ms()), "a little dirt is below the ratio"


def test_compaction_in_the_background_thread(manager_factory, clock):
    manager = manager_factory(maintenance_interval_ms=10)
    log = manager.get_or_create_log("bg", 0, COMPACT)
    for _ in range(30):
        log.append_as_leader(build_batch([(b"same", b"v" * 100, clock.now_ms())]), 0)
    log.roll()
    manager.start()
    deadline = time.monotonic() + 10
    while len(read_all(log)) > 1 and time.monotonic() < deadline:
        time.sleep(0.01)  # polling a condition with a deadline
    assert [r[0] for r in read_all(log)] == [29], "only the last record of the key survives"
