"""Log maintenance visits only the logs with work: retention every `retention_check_interval_ms`, flushes and
delayed deletions for the logs that asked (`LogContext.maintenance_due`). Tested against an oracle: a second
manager, fed the same steps on the same clock, whose pass visits every log (retention on the same interval);
after every step both hold the same logs, segments, files, log starts and recovery points, and the first
visited only the logs the step touched."""

from collections import Counter
from pathlib import Path

import pytest

from brokerd.storage import LogManager
from brokerd.storage.log import Log
from tests.brokerd.storage.conftest import build_batch

RETENTION_CHECK_MS = 60_000
LOGS = 6
DEFAULTS = {"segment.bytes": 400, "retention.ms": 30_000, "file.delete.delay.ms": 5_000}
VISITS = ("delete_old_segments", "maybe_flush", "delete_expired_files")


def every_log_pass(manager: LogManager, now_ms: int, retention: bool) -> None:
    """The oracle's pass: every log, every time (retention when `retention`), then the checkpoints."""
    monotonic_ms = manager.clock.monotonic_ms()
    for _, log in manager.logs():
        if retention:
            log.delete_old_segments(now_ms)
        log.maybe_flush(monotonic_ms)
        log.delete_expired_files(monotonic_ms)
    manager.write_checkpoints()


def state(manager: LogManager) -> dict:
    return {tp: (log.log_start_offset, log.recovery_point, [s.base_offset for s in log.segments()],
                 sorted(p.name for p in log.dir.iterdir()))
            for tp, log in sorted(manager.logs())}


def append(manager: LogManager, clock, partition: int, count: int = 1, topic: str = "t") -> None:
    log = manager.get_log(topic, partition)
    for _ in range(count):
        log.append_as_leader(build_batch([(b"k", b"v" * 150, clock.now_ms())]), 0)


STEPS = [  # (what happens before a pass, the manager; milliseconds the clock moves first) -> logs visited
    ("first pass: retention looks at every log", lambda m, c: None, 0, "all"),
    ("idle", lambda m, c: None, 1000, set()),
    ("an append (flush.ms unset): nothing to do", lambda m, c: append(m, c, 0), 1000, set()),
    ("appends that roll a segment: flushed by the next pass", lambda m, c: append(m, c, 1, 4), 1000, {("t", 1)}),
    ("idle after the flush", lambda m, c: None, 1000, set()),
    ("an append under flush.ms=2000, the last flush long ago: flushed at once",
     lambda m, c: append(m, c, 0, topic="f"), 1000, {("f", 0)}),
    ("another append, a second after that flush", lambda m, c: append(m, c, 0, topic="f"), 1000, {("f", 0)}),
    ("flush.ms not passed yet: still looked at", lambda m, c: None, 500, {("f", 0)}),
    ("flush.ms passed: flushed", lambda m, c: None, 1000, {("f", 0)}),
    ("flushed: left alone", lambda m, c: None, 1000, set()),
    ("DeleteRecords: the segments wait for file.delete.delay.ms",
     lambda m, c: m.get_log("t", 1).delete_records_before(3), 1000, {("t", 1)}),
    ("the delay not passed yet", lambda m, c: None, 1000, {("t", 1)}),
    ("the delay passed: files deleted", lambda m, c: None, 5000, {("t", 1)}),
    ("deleted: left alone", lambda m, c: None, 1000, set()),
    ("a truncation schedules deletions", lambda m, c: (append(m, c, 2, 4), m.get_log("t", 2).truncate_to(1)),
     1000, {("t", 2)}),
    ("flush.ms set on a topic whose log holds unflushed messages",
     lambda m, c: m.update_topic_config("t", {**DEFAULTS, "flush.ms": 1000}), 1000, "topic t"),
    ("the truncated log's files go", lambda m, c: None, 5000, {("t", 2)}),
    ("appends that roll another log", lambda m, c: append(m, c, 3, 4), 1000, {("t", 3)}),
    ("retention.ms passed, its interval not yet: nothing", lambda m, c: None, 31_000, set()),
    ("the retention interval is up: every log, the old segments go", lambda m, c: None, RETENTION_CHECK_MS, "all"),
    ("their files wait", lambda m, c: None, 1000, {("t", 3)}),
    ("then go", lambda m, c: None, 5000, {("t", 3)}),
    ("idle at the end", lambda m, c: None, 1000, set()),
]


@pytest.fixture
def managers(tmp_path: Path, clock):
    pair = []
    for name in ("visits", "oracle"):
        manager = LogManager([tmp_path / name], DEFAULTS, clock, retention_check_interval_ms=RETENTION_CHECK_MS)
        manager.startup()
        manager.update_topic_config("f", {**DEFAULTS, "segment.bytes": 1 << 20, "flush.ms": 2000})  # never rolls
        for partition in range(LOGS):
            manager.get_or_create_log("t", partition)
        manager.get_or_create_log("f", 0)
        pair.append(manager)
    yield pair
    for manager in pair:
        manager.shutdown()


def test_a_pass_visits_only_the_logs_with_work_and_ends_as_visiting_every_log(managers, clock, monkeypatch):
    manager, oracle = managers
    visited: Counter = Counter()
    for name in VISITS:
        real = getattr(Log, name)
        monkeypatch.setattr(Log, name, lambda log, *args, _real=real, _name=name: (
            visited.update([(log.topic, log.partition)]) if log.dir.is_relative_to(manager.log_dirs[0].path)
            else None, _real(log, *args))[1])
    every = {tp for tp, _ in manager.logs()}
    next_retention = 0
    for name, step, advance_ms, expected in STEPS:
        clock.advance_ms(advance_ms)
        step(manager, clock)
        step(oracle, clock)
        visited.clear()
        manager.run_maintenance(clock.now_ms())
        retention = clock.monotonic_ms() >= next_retention
        if retention:
            next_retention = clock.monotonic_ms() + RETENTION_CHECK_MS
        every_log_pass(oracle, clock.now_ms(), retention)
        if expected == "all":
            expected = every
        elif expected == "topic t":
            expected = {tp for tp in every if tp[0] == "t"}
        assert set(visited) == expected, name
        assert state(manager) == state(oracle), name
    assert manager.get_log("t", 3).log_start_offset == 3 and not list(manager.get_log("t", 3).dir.glob("*.deleted"))


def test_a_deleted_log_is_no_longer_visited(tmp_path, clock):
    manager = LogManager([tmp_path / "data"], DEFAULTS, clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    append(manager, clock, 0, 4)  # rolled: due
    assert manager._due == {log}
    manager.delete_log("t", 0)
    assert manager._due == set()
    manager.run_maintenance(clock.now_ms())  # nothing left to visit, no error
    manager.shutdown()
