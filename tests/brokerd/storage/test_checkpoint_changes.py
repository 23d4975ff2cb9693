"""A checkpoint pass works from the logs that changed (`LogContext.checkpoint_changes`), not from every log.
Tested against an oracle: after every step of the table, each log dir's three offset checkpoints hold exactly
what a mapping built from every log of that dir says, the files rewritten by the pass are exactly those whose
content the step changed (an idle pass rewrites nothing), and the pass looks only at the logs the step touched."""

import os
from pathlib import Path

import pytest

from brokerd.storage import LogManager
from brokerd.storage.checkpoints import read_offsets
from brokerd.storage.log_manager import HIGH_WATERMARK_FILE, LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE
from tests.brokerd.storage.conftest import build_batch

DEFAULTS = {"segment.bytes": 400, "file.delete.delay.ms": 0}
FILES = {RECOVERY_POINT_FILE: "recovery_point", LOG_START_OFFSET_FILE: "log_start_offset",
         HIGH_WATERMARK_FILE: "high_watermark"}
ALL = "every file of every dir"


def append(manager: LogManager, clock, topic: str, partition: int, count: int = 1) -> None:
    log = manager.get_log(topic, partition)
    for _ in range(count):
        log.append_as_leader(build_batch([(b"k", b"v" * 150, clock.now_ms())]), 0)


def high_watermark(manager: LogManager, topic: str, partition: int, offset: int | None = None) -> None:
    log = manager.get_log(topic, partition)
    log.high_watermark = log.log_end_offset if offset is None else offset


def dir_of(manager: LogManager, topic: str, partition: int) -> int:
    return manager.log_dirs.index(manager.get_log(topic, partition).log_dir)


STEPS = [  # (what happens before a pass) -> {(dir index, file)} rewritten, or ALL; `where` names a log's dir
    ("the first pass of a process writes every file", lambda m, c: None, ALL),
    ("idle", lambda m, c: None, set()),
    ("appends without a roll or a flush: nothing checkpointed moved", lambda m, c: append(m, c, "t", 0), set()),
    ("the high watermark follows", lambda m, c: high_watermark(m, "t", 0), {("t", 0, HIGH_WATERMARK_FILE)}),
    ("set again to the same offset", lambda m, c: high_watermark(m, "t", 0), set()),
    ("a flush moves the recovery point", lambda m, c: m.get_log("t", 0).flush(), {("t", 0, RECOVERY_POINT_FILE)}),
    ("appends that roll a segment, high watermark to the end",
     lambda m, c: (append(m, c, "t", 1, 4), high_watermark(m, "t", 1)), {("t", 1, HIGH_WATERMARK_FILE)}),
    ("maintenance flushes the rolled segment (its pass checkpoints it)",
     lambda m, c: m.run_maintenance(c.now_ms()), {("t", 1, RECOVERY_POINT_FILE)}),
    ("DeleteRecords moves the log start",
     lambda m, c: m.get_log("t", 1).delete_records_before(2), {("t", 1, LOG_START_OFFSET_FILE)}),
    ("a new log in each dir",
     lambda m, c: (m.get_or_create_log("u", 0), m.get_or_create_log("u", 1)),
     {("u", 0, name) for name in FILES} | {("u", 1, name) for name in FILES}),
    ("two logs change in the same pass",
     lambda m, c: (append(m, c, "t", 2), high_watermark(m, "t", 2), high_watermark(m, "u", 0, 0),
                   append(m, c, "t", 3), high_watermark(m, "t", 3)),
     {("t", 2, HIGH_WATERMARK_FILE), ("t", 3, HIGH_WATERMARK_FILE)}),
    ("a truncation below the high watermark and recovery point",
     lambda m, c: (m.get_log("t", 0).truncate_to(0), high_watermark(m, "t", 0, 0)),
     {("t", 0, RECOVERY_POINT_FILE), ("t", 0, HIGH_WATERMARK_FILE)}),
    ("a deleted log leaves its dir's files", "delete t-1", {("t", 1, name) for name in FILES}),
    ("created again", lambda m, c: m.get_or_create_log("t", 1), {("t", 1, name) for name in FILES}),
    ("deleted and created again before a pass, back at the same offsets (looked at, nothing to write)",
     lambda m, c: (m.delete_log("u", 1), m.get_or_create_log("u", 1)), set()),
    ("idle at the end", lambda m, c: None, set()),
]

LOOKED_AT = {  # the logs a step touched (a value changed, added or removed); none for the others
    "the first pass of a process writes every file": {("t", p) for p in range(4)},
    "the high watermark follows": {("t", 0)},
    "a flush moves the recovery point": {("t", 0)},
    "appends that roll a segment, high watermark to the end": {("t", 1)},
    "DeleteRecords moves the log start": {("t", 1)},
    "a new log in each dir": {("u", 0), ("u", 1)},
    "two logs change in the same pass": {("t", 2), ("t", 3)},
    "a truncation below the high watermark and recovery point": {("t", 0)},
    "a deleted log leaves its dir's files": {("t", 1)},
    "created again": {("t", 1)},
    "deleted and created again before a pass, back at the same offsets (looked at, nothing to write)": {("u", 1)},
}


@pytest.fixture
def manager(tmp_path: Path, clock):
    manager = LogManager([tmp_path / "a", tmp_path / "b"], DEFAULTS, clock)
    manager.startup()
    for partition in range(4):
        manager.get_or_create_log("t", partition)
    yield manager
    manager.shutdown()


def oracle(manager: LogManager, directory) -> dict[str, dict[tuple[str, int], int]]:
    logs = [(tp, log) for tp, log in manager.logs() if log.log_dir is directory]
    return {name: {tp: getattr(log, attribute) for tp, log in logs} for name, attribute in FILES.items()}


def inodes(manager: LogManager) -> dict[tuple[int, str], int]:
    return {(i, name): os.stat(d.path / name).st_ino for i, d in enumerate(manager.log_dirs) for name in FILES
            if (d.path / name).exists()}


def test_each_pass_writes_exactly_the_changed_files_and_matches_the_oracle(manager, clock):
    before = {}
    deleted_dir = None
    for name, step, expected in STEPS:
        clock.advance_ms(1000)
        if step == "delete t-1":
            deleted_dir = dir_of(manager, "t", 1)
            manager.delete_log("t", 1)
            expected = {(deleted_dir, file) for _, _, file in expected}
        else:
            step(manager, clock)
            if expected != ALL:
                expected = {(dir_of(manager, topic, partition), file) for topic, partition, file in expected}
        changes = manager._checkpoint_changes
        looked_at = {(log.topic, log.partition)
                     for log in changes.log_start_offset | changes.recovery_point | changes.high_watermark}
        manager.write_checkpoints()
        after = inodes(manager)
        rewritten = {key for key, inode in after.items() if before.get(key) != inode}
        assert looked_at == LOOKED_AT.get(name, set()), name
        if expected == ALL:
            expected = set(after)
        assert rewritten == expected, name
        for directory in manager.log_dirs:
            for file, offsets in oracle(manager, directory).items():
                assert read_offsets(directory.path / file) == offsets, (name, directory.path.name, file)
        before = after
    assert deleted_dir is not None
