"""`OffsetCheckpointFile`: rewritten only when its content changed, never skipped after a change or a failed
write; the file always reads back as the last mapping written."""

import shutil

import pytest

from brokerd.storage import checkpoints
from brokerd.storage.checkpoints import OffsetCheckpointFile, read_offsets

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)

# (mapping held durably, mapping the next pass would write, whether it is written)
CASES = [
    ({A0: 5, A1: 7}, {A0: 5, A1: 7}, False),  # nothing changed
    ({A0: 5, A1: 7}, {A1: 7, A0: 5}, False),  # same content, built in another order
    ({A0: 5, A1: 7}, {A0: 6, A1: 7}, True),  # one value moved forward
    ({A0: 5, A1: 7}, {A0: 4, A1: 7}, True),  # one value moved back (a truncated log's recovery point)
    ({A0: 5}, {A0: 5, B0: 0}, True),  # a log added, at offset 0
    ({A0: 5, B0: 0}, {A0: 5}, True),  # a log removed
    ({}, {}, False),
]


@pytest.mark.parametrize(("durable", "offsets", "written"), CASES)
def test_written_only_when_the_content_changed(tmp_path, durable, offsets, written):
    file = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    assert file.write(durable), "the first write of a process always writes"
    assert file.write(offsets) is written
    assert read_offsets(file.path) == offsets


def test_the_file_read_at_startup_is_not_trusted(tmp_path):
    path = tmp_path / "log-start-offset-checkpoint"
    OffsetCheckpointFile(path).write({A0: 3})
    assert OffsetCheckpointFile(path).write({A0: 3}), "another process's rename may not be durable yet"


def test_a_failed_write_is_retried_by_the_next_one(tmp_path):
    directory = tmp_path / "dir"
    directory.mkdir()
    file = OffsetCheckpointFile(directory / "replication-offset-checkpoint")
    file.write({A0: 1})
    shutil.rmtree(directory)  # the write fails before anything is renamed
    with pytest.raises(FileNotFoundError):
        file.write({A0: 2})
    directory.mkdir()
    assert file.write({A0: 2})
    assert read_offsets(file.path) == {A0: 2}


def test_a_write_failing_after_its_rename_leaves_the_content_unknown(tmp_path, monkeypatch):
    """The directory fsync fails: the file may hold the new mapping, so writing the old one again must write."""
    file = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    file.write({A0: 1})

    def failing_fsync_dir(path):
        raise OSError("EIO")

    monkeypatch.setattr(checkpoints, "fsync_dir", failing_fsync_dir)
    with pytest.raises(OSError, match="EIO"):
        file.write({A0: 2})
    monkeypatch.undo()
    assert read_offsets(file.path) == {A0: 2}
    assert file.write({A0: 1})
    assert read_offsets(file.path) == {A0: 1}
