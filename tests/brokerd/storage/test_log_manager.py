"""LogManager: placement over several log dirs, a failing dir going offline alone, bounded file
handles, checkpoints and the clean-shutdown marker, topic config updates and log deletion."""

import errno
import uuid

import pytest

from brokerd.storage import LogManager, checkpoints, log_manager, topic_id_file
from brokerd.storage.checkpoints import read_epochs, read_offsets
from brokerd.storage.cleaner import CHECKPOINT_FILE as CLEANER_CHECKPOINT_FILE
from brokerd.storage.errors import KafkaStorageError

from .conftest import build_batch, decode  # noqa: TID252

KEPT_ID = uuid.UUID("0b7c4a2e-3f0d-4a51-9a3c-5d6e7f809102")
OLD_ID = uuid.UUID("1c8d5b3f-4a1e-4b62-8b4d-6e7f80910213")
NEW_ID = uuid.UUID("2d9e6c40-5b2f-4c73-9c5e-7f8091021324")


def test_logs_spread_over_dirs_and_reload(tmp_path, clock):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, {}, clock)
    manager.startup()
    for partition in range(4):
        manager.get_or_create_log("t-x", partition).append_as_leader(
            build_batch([(b"k", b"v", clock.now_ms())] * (partition + 1)), 7)
    assert sorted(p.name for d in dirs for p in d.iterdir() if p.is_dir()) == [f"t-x-{i}" for i in range(4)]
    assert all(len([p for p in d.iterdir() if p.is_dir()]) == 2 for d in dirs)
    manager.shutdown()
    assert all((d / ".kafka_cleanshutdown").exists() for d in dirs)
    assert read_offsets(dirs[0] / "recovery-point-offset-checkpoint")
    reloaded = LogManager(dirs, {}, clock)
    reloaded.startup()
    assert not any((d / ".kafka_cleanshutdown").exists() for d in dirs), "a crash from now on is unclean"
    assert {tp: log.log_end_offset for tp, log in reloaded.logs()} == {("t-x", i): i + 1 for i in range(4)}
    log = reloaded.get_log("t-x", 2)
    assert read_epochs(log.dir / "leader-epoch-checkpoint") == [(7, 0)]
    reloaded.shutdown()


def test_failing_disk_takes_only_its_dir_offline(tmp_path, clock, monkeypatch):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, {}, clock)
    manager.startup()
    healthy, failing = (manager.get_or_create_log("t", i) for i in range(2))
    assert healthy.log_dir is not failing.log_dir
    batch = build_batch([(b"k", b"v", clock.now_ms())])
    healthy.append_as_leader(bytearray(batch), 0)
    failing.append_as_leader(bytearray(batch), 0)
    before = failing.active_segment.log_path.read_bytes()
    file_type = type(failing.active_segment.file())
    real_write = file_type.write

    def write_half_then_fail(self, data):
        if str(self.name) != str(failing.active_segment.log_path):
            return real_write(self, data)
        real_write(self, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(file_type, "write", write_half_then_fail)
    with pytest.raises(KafkaStorageError) as raised:
        failing.append_as_leader(bytearray(batch), 0)
    monkeypatch.undo()
    assert raised.value.kafka_error == "KAFKA_STORAGE_ERROR"
    assert manager.offline_dirs() == [failing.log_dir.path]
    assert failing.active_segment.log_path.read_bytes() == before, "nothing half-written stays"
    with pytest.raises(KafkaStorageError):
        failing.read(0, 100, 1)
    assert healthy.append_as_leader(bytearray(batch), 0).first_offset == 1
    assert manager.get_or_create_log("t", 5).log_dir is healthy.log_dir
    manager.shutdown()


def test_open_file_handles_are_bounded(tmp_path, clock):
    manager = LogManager([tmp_path], {"segment.bytes": 200}, clock, max_open_files=3)
    manager.startup()
    logs = [manager.get_or_create_log("t", i) for i in range(6)]
    for _ in range(4):
        for log in logs:
            log.append_as_leader(build_batch([(b"k", b"v" * 120, clock.now_ms())]), 0)
    for log in logs:
        assert len(decode(log.read_bytes(log.read(0, 1 << 20, log.log_end_offset)))) == 1
    assert len(manager.handles) <= 3
    manager.shutdown()


def test_topic_config_update_and_delete_log(tmp_path, clock):
    manager = LogManager([tmp_path], {}, clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0, {"retention.ms": "1000"})
    assert log.config.retention_ms == 1000
    manager.update_topic_config("t", {"cleanup.policy": "compact"})
    assert log.config.compact and log.config.retention_ms == 604_800_000
    log.append_as_leader(build_batch([(b"k", b"v", clock.now_ms())]), 0)
    region = log.read(0, 100, 1)
    manager.delete_log("t", 0)
    assert manager.get_log("t", 0) is None and not any(tmp_path.glob("t-0*"))
    assert decode(log.read_bytes(region))[0][0] == 0, "a handed-out region stays readable"
    manager.shutdown()


def test_partition_dir_names():
    assert log_manager.parse_partition_dir("my-topic-12") == ("my-topic", 12)
    assert log_manager.parse_partition_dir("notapartition") is None


def test_high_watermarks_are_checkpointed_and_clamped_into_the_log_on_load(tmp_path, clock):
    """`replication-offset-checkpoint`: written by every maintenance pass and at shutdown; read at start,
    where a high watermark above what the log still holds (its tail was lost in a crash) is lowered."""
    data = tmp_path / "data"
    manager = LogManager([data], {}, clock)
    manager.startup()
    for partition, records in ((0, 3), (1, 5)):
        log = manager.get_or_create_log("t", partition)
        for _ in range(records):
            log.append_as_leader(build_batch([(None, b"v", clock.now_ms())]), 0)
        log.high_watermark = records - 1
    manager.run_maintenance(clock.now_ms())
    assert read_offsets(data / log_manager.HIGH_WATERMARK_FILE) == {("t", 0): 2, ("t", 1): 4}
    manager.get_log("t", 0).high_watermark = 3
    manager.shutdown()
    assert read_offsets(data / log_manager.HIGH_WATERMARK_FILE) == {("t", 0): 3, ("t", 1): 4}
    checkpoint = data / log_manager.HIGH_WATERMARK_FILE
    checkpoint.write_text("0\n2\nt 0 3\nt 1 9\n")  # 9: above the log end (say the tail was torn off)
    reloaded = LogManager([data], {}, clock)
    reloaded.startup()
    assert {tp: log.high_watermark for tp, log in reloaded.logs()} == {("t", 0): 3, ("t", 1): 5}
    reloaded.shutdown()
    checkpoint.write_text("garbage")
    fresh = LogManager([data], {}, clock)
    fresh.startup()
    assert {tp: log.high_watermark for tp, log in fresh.logs()} == {("t", 0): 0, ("t", 1): 0}
    fresh.shutdown()


def test_stray_logs_are_deleted_only_in_dirs_of_the_same_cluster(tmp_path, clock):
    data = tmp_path / "data"
    manager = LogManager([data], {}, clock)
    manager.startup()
    for topic in ("kept", "gone"):
        manager.get_or_create_log(topic, 0).append_as_leader(build_batch([(None, b"v", clock.now_ms())]), 0)
    live = {"kept": KEPT_ID}
    assert manager.delete_stray_logs("cluster-a", 1, live) == []  # first start: the dir is claimed only
    assert "cluster.id=cluster-a" in (data / log_manager.META_PROPERTIES_FILE).read_text()
    assert manager.delete_stray_logs("cluster-b", 1, live) == []  # another cluster's image: hands off
    assert manager.delete_stray_logs("cluster-a", 1, live) == [("gone", 0)]
    assert sorted(tp for tp, _ in manager.logs()) == [("kept", 0)]
    assert sorted(p.name for p in data.iterdir() if p.is_dir()) == ["kept-0"]
    manager.shutdown()


def test_partition_metadata_names_the_topic_id_as_kafka_writes_it(tmp_path, clock):
    manager = LogManager([tmp_path], {}, clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0, topic_id=OLD_ID)
    text = (log.dir / topic_id_file.FILE_NAME).read_text()
    assert text == "version: 0\ntopic_id: HI1bP0oeS2KLTW5_gJECEw\n"  # Kafka's Uuid.toString of OLD_ID
    assert topic_id_file.read(log.dir) == OLD_ID
    manager.shutdown()


def test_a_log_of_an_earlier_topic_of_the_same_name_is_deleted_not_served(tmp_path, clock):
    data = tmp_path / "data"
    manager = LogManager([data], {}, clock)
    manager.startup()
    manager.get_or_create_log("t", 0, topic_id=OLD_ID).append_as_leader(build_batch([(None, b"old", 1)]), 0)
    manager.get_or_create_log("t", 1, topic_id=OLD_ID).append_as_leader(build_batch([(None, b"old", 1)]), 0)
    manager.get_or_create_log("legacy", 0).append_as_leader(build_batch([(None, b"v", 1)]), 0)  # no id known
    manager.shutdown()
    restarted = LogManager([data], {}, clock)
    restarted.startup()
    restarted.delete_stray_logs("c", 1, {})  # claims the dir
    # the topic was deleted and re-created (new id, one partition) while the broker was down
    assert restarted.delete_stray_logs("c", 1, {"t": NEW_ID, "legacy": KEPT_ID}) == [("t", 0), ("t", 1)]
    fresh = restarted.get_or_create_log("t", 0, topic_id=NEW_ID)
    assert fresh.log_end_offset == 0 and topic_id_file.read(fresh.dir) == NEW_ID
    adopted = restarted.get_or_create_log("legacy", 0, topic_id=KEPT_ID)
    assert adopted.log_end_offset == 1 and topic_id_file.read(adopted.dir) == KEPT_ID
    restarted.shutdown()


def test_get_or_create_replaces_a_loaded_log_of_another_topic_id(tmp_path, clock):
    manager = LogManager([tmp_path], {}, clock)
    manager.startup()
    manager.get_or_create_log("t", 0, topic_id=OLD_ID).append_as_leader(build_batch([(None, b"old", 1)]), 0)
    replaced = manager.get_or_create_log("t", 0, topic_id=NEW_ID)
    assert replaced.log_end_offset == 0 and topic_id_file.read(replaced.dir) == NEW_ID
    assert manager.get_or_create_log("t", 0, topic_id=NEW_ID) is replaced
    manager.shutdown()


def test_maintenance_rewrites_only_the_checkpoints_that_changed(tmp_path, clock, monkeypatch):
    """Each step, then one maintenance pass: the checkpoint files rewritten, and every file reads back as the
    logs' current values (written or not)."""
    data = tmp_path / "data"
    manager = LogManager([data], {}, clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    written = []
    real_write = checkpoints.write_atomically

    every = {log_manager.RECOVERY_POINT_FILE, log_manager.LOG_START_OFFSET_FILE, log_manager.HIGH_WATERMARK_FILE}

    def counting_write(path, data, *args, **kwargs):
        if path.name in every | {CLEANER_CHECKPOINT_FILE}:  # not leader-epoch-checkpoint, partition.metadata
            written.append(path.name)
        real_write(path, data, *args, **kwargs)

    monkeypatch.setattr(checkpoints, "write_atomically", counting_write)
    steps = [
        ("first pass", lambda: None, every | {CLEANER_CHECKPOINT_FILE}),
        ("nothing changed", lambda: None, set()),
        ("appended, not flushed", lambda: log.append_as_leader(build_batch([(None, b"v", clock.now_ms())]), 0),
         set()),
        ("flushed", log.flush, {log_manager.RECOVERY_POINT_FILE}),
        ("high watermark moved", lambda: setattr(log, "high_watermark", 1), {log_manager.HIGH_WATERMARK_FILE}),
        ("log start moved", lambda: log.delete_records_before(1), {log_manager.LOG_START_OFFSET_FILE}),
        ("log added", lambda: manager.get_or_create_log("t", 1), every),
        ("log removed", lambda: manager.delete_log("t", 1), every),
        ("nothing changed again", lambda: None, set()),
    ]
    for name, step, expected in steps:
        step()
        written.clear()
        manager.run_maintenance(clock.now_ms())
        assert set(written) == expected and len(written) == len(expected), name
        for file, value in ((log_manager.RECOVERY_POINT_FILE, "recovery_point"),
                            (log_manager.LOG_START_OFFSET_FILE, "log_start_offset"),
                            (log_manager.HIGH_WATERMARK_FILE, "high_watermark")):
            assert read_offsets(data / file) == {tp: getattr(lg, value) for tp, lg in manager.logs()}, (name, file)
    manager.shutdown()
