"""Corruption and recovery: flipped bytes, torn `.log`, truncated/garbage/missing indexes, and a
crash that leaves a compaction swap half done."""

import os
from pathlib import Path

import pytest

from brokerd.storage import LogManager
from brokerd.storage.checkpoints import read_epochs

from .conftest import build_batch, decode  # noqa: TID252

DEFAULTS = {"segment.bytes": 2048, "index.interval.bytes": 256, "retention.ms": -1}


def write_log(tmp_path: Path, clock, batches: int = 40) -> list:
    manager = LogManager([tmp_path], DEFAULTS, clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    for i in range(batches):
        log.append_as_leader(build_batch([(b"k%d" % i, b"v" * 60, clock.now_ms())] * 3), 0)
    everything = read_all(log)
    manager.shutdown()
    return everything


def read_all(log) -> list:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        batches = decode(log.read_bytes(log.read(offset, 1 << 20, log.log_end_offset)))
        out += batches
        offset = batches[-1][1][-1][0] + 1
    return out


def reopen(tmp_path: Path, clock, clean: bool):
    if not clean:
        (tmp_path / ".kafka_cleanshutdown").unlink(missing_ok=True)
        (tmp_path / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
    manager = LogManager([tmp_path], DEFAULTS, clock)
    manager.startup()
    return manager, manager.get_log("t", 0)


def segment_files(tmp_path: Path, suffix: str) -> list[Path]:
    return sorted((tmp_path / "t-0").glob("*" + suffix))


def test_flipped_byte_in_the_tail_truncates_from_that_batch(tmp_path, clock):
    before = write_log(tmp_path, clock)
    last = segment_files(tmp_path, ".log")[-1]
    data = bytearray(last.read_bytes())
    data[len(data) // 2] ^= 0x55
    last.write_bytes(bytes(data))
    manager, log = reopen(tmp_path, clock, clean=False)
    after = read_all(log)
    assert after == before[: len(after)] and len(after) < len(before)
    assert last.stat().st_size < len(data)
    assert log.append_as_leader(build_batch([(b"k", b"v", clock.now_ms())]), 1).first_offset == log.log_end_offset - 1


@pytest.mark.parametrize("cut", [1, 30, 61, 100])
def test_torn_log_tail_is_truncated_to_whole_batches(tmp_path, clock, cut):
    before = write_log(tmp_path, clock)
    last = segment_files(tmp_path, ".log")[-1]
    os.truncate(last, last.stat().st_size - cut)
    _, log = reopen(tmp_path, clock, clean=False)
    after = read_all(log)
    assert after == before[: len(after)] and len(before) - len(after) == 1


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage"])
@pytest.mark.parametrize("clean", [True, False])
def test_damaged_indexes_are_rebuilt(tmp_path, clock, damage, clean):
    before = write_log(tmp_path, clock)
    for path in segment_files(tmp_path, ".index") + segment_files(tmp_path, ".timeindex"):
        if damage == "missing":
            path.unlink()
        elif damage == "truncated":
            os.truncate(path, max(path.stat().st_size - 5, 0))
        else:
            path.write_bytes(os.urandom(path.stat().st_size or 16))
    manager, log = reopen(tmp_path, clock, clean=clean)
    assert read_all(log) == before
    for offset in range(0, log.log_end_offset, 7):
        region = log.read(offset, 1, log.log_end_offset)
        (base, records), = decode(log.read_bytes(region))
        assert base <= offset <= records[-1][0]
    assert log.offset_for_timestamp(clock.now_ms()) == (0, clock.now_ms())
    manager.shutdown()
    sizes = [p.stat().st_size for p in segment_files(tmp_path, ".index")]
    assert all(size % 8 == 0 for size in sizes) and sum(sizes) > 0, "rebuilt indexes were written back"


def test_leftover_compaction_files_are_discarded(tmp_path, clock):
    before = write_log(tmp_path, clock)
    first = segment_files(tmp_path, ".log")[0]
    first.with_name(first.name + ".cleaned").write_bytes(b"partial copy")
    index = segment_files(tmp_path, ".index")[0]
    index.unlink()
    _, log = reopen(tmp_path, clock, clean=False)
    assert read_all(log) == before
    assert not list((tmp_path / "t-0").glob("*.cleaned"))


def test_unclean_shutdown_recovers_only_from_the_recovery_point(tmp_path, clock):
    before = write_log(tmp_path, clock)
    (tmp_path / ".kafka_cleanshutdown").unlink()
    first = segment_files(tmp_path, ".log")[0]
    data = bytearray(first.read_bytes())
    data[-1] ^= 0xFF  # below the recovery point: trusted, not re-validated (Kafka does the same)
    first.write_bytes(bytes(data))
    manager = LogManager([tmp_path], DEFAULTS, clock)
    manager.startup()
    assert manager.get_log("t", 0).log_end_offset == before[-1][1][-1][0] + 1


def test_leader_epochs_are_written_without_fsync_and_recovered_from_the_batches(tmp_path, clock, monkeypatch):
    """The oracle: the epochs the batches were appended under. A new epoch costs no fsync and no file write;
    `flush` writes and fsyncs the checkpoint; after a crash that lost it, recovery assigns every epoch again
    from the batch headers."""
    manager = LogManager([tmp_path], DEFAULTS, clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    appended = []
    for epoch in (0, 0, 2, 2, 5):
        info = log.append_as_leader(build_batch([(b"k", b"v" * 60, clock.now_ms())] * 3), epoch)
        appended.append((epoch, info.first_offset))
    expected = [(e, o) for i, (e, o) in enumerate(appended) if i == 0 or e != appended[i - 1][0]]
    fsynced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsynced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                 real_fsync(fd)))
    on_disk = log.leader_epoch_cache.path.read_bytes() if log.leader_epoch_cache.path.exists() else b""
    log.leader_epoch_cache.assign(7, log.log_end_offset)  # what becoming leader at epoch 7 does
    assert fsynced == []
    assert (log.leader_epoch_cache.path.read_bytes() if log.leader_epoch_cache.path.exists() else b"") == on_disk
    log.flush()
    assert str(log.leader_epoch_cache.path) in fsynced
    assert read_epochs(log.leader_epoch_cache.path)[-1] == (7, log.log_end_offset)
    monkeypatch.undo()
    manager.handles.clear()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()  # lost in the crash
    manager, log = reopen(tmp_path, clock, clean=False)
    assert log.leader_epoch_cache.entries() == expected
    manager.shutdown()
