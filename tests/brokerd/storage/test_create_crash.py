"""SIGKILL a process creating logs in batches (create_writer.py) at random moments and check, against the
batches it reported created (the oracle), that every reported log survives with its topic id, that a log of
the batch in flight is either absent or complete enough to be adopted, and that nothing else appears."""

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from brokerd.clock import ManualClock
from brokerd.storage import LogManager, NewLog, topic_id_file
from brokerd.storage.log_manager import parse_partition_dir

from .create_writer import batch_size, topic_id  # noqa: TID252

WRITER = Path(__file__).with_name("create_writer.py")
REPO = Path(__file__).resolve().parents[3]


def kill_creator_once(data_dir: Path, first_batch: int, rng: random.Random) -> int:
    """Run the creator from `first_batch`, SIGKILL it after a random number of reports; one past the last
    batch it reported created."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, str(WRITER), str(data_dir), "0", str(first_batch)],
                               stdout=subprocess.PIPE, env=env, cwd=REPO)
    created = first_batch
    try:
        reports_before_kill = rng.randint(0, 6)
        for line in process.stdout:
            created = int(line.split()[1]) + 1
            reports_before_kill -= 1
            if reports_before_kill <= 0:
                break
        process.send_signal(signal.SIGKILL)
        for line in process.stdout:  # reports written before the kill landed are promises too
            created = int(line.split()[1]) + 1
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    assert process.returncode == -signal.SIGKILL, "the creator died of something else"
    return created


def verify_and_complete(data_dir: Path, created: int) -> None:
    """Load the dir as a restarting broker would and check it against the reported batches; then create the
    in-flight batch's missing logs (what the next metadata image does), so every batch below `created + 1`
    is complete for the next round."""
    manager = LogManager([data_dir], {}, ManualClock())
    manager.startup()
    assert manager.log_dirs[0].online
    on_disk = {tp for tp, _ in manager.logs()}
    expected = {(f"t{k}", p) for k in range(created) for p in range(batch_size(k))}
    assert expected <= on_disk, f"reported logs lost: {sorted(expected - on_disk)[:5]}"
    in_flight = {(f"t{created}", p) for p in range(batch_size(created))}
    assert on_disk - expected <= in_flight, f"logs nobody created: {sorted(on_disk - expected - in_flight)[:5]}"
    for name in os.listdir(data_dir):
        if parse_partition_dir(name) is None:
            continue
        topic, partition = parse_partition_dir(name)
        stored = topic_id_file.read(data_dir / name)
        batch = int(topic[1:])
        assert stored == topic_id(batch) or (stored is None and (topic, partition) in in_flight), name
        assert not [f for f in os.listdir(data_dir / name) if f.endswith(".tmp")], "a temp file survived loading"
        log = manager.get_log(topic, partition)
        assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    for topic, partition in sorted(in_flight):
        assert manager.get_or_create_log(topic, partition, {}, topic_id(created)) is not None
        assert topic_id_file.read(data_dir / f"{topic}-{partition}") == topic_id(created)
    manager.handles.clear()  # no clean shutdown: the next round loads after a crash again


def test_sigkill_during_log_creation_keeps_every_created_log(tmp_path):
    rng = random.Random(7)
    data_dir = tmp_path / "data"
    batch = 0
    for _ in range(8):
        created = kill_creator_once(data_dir, batch, rng)
        verify_and_complete(data_dir, created)
        batch = created + 1


def test_created_logs_are_lazy_and_batched(tmp_path):
    """A created log holds no file handle and no index until written; a batch spreads over the dirs."""
    manager = LogManager([tmp_path / "a", tmp_path / "b"], {}, ManualClock())
    manager.startup()
    created = manager.create_logs([NewLog("lazy", p) for p in range(10)])
    assert len(created) == 10 and len(manager.handles) == 0
    assert {log.log_dir.path.name for log in created.values()} == {"a", "b"}
    segment = created[("lazy", 0)].active_segment
    assert segment._offset_index is None and segment._time_index is None
    assert sorted(os.listdir(segment.directory)) == ["00000000000000000000.log"]
    manager.shutdown()
    for clean in (True, False):  # after a clean shutdown, and after a crash (every log recovered)
        reloaded = LogManager([tmp_path / "a", tmp_path / "b"], {}, ManualClock())
        reloaded.startup()
        assert len(reloaded.logs()) == 10 and len(reloaded.handles) == 0
        assert reloaded.get_log("lazy", 3).active_segment._offset_index is None
        if clean:
            reloaded.handles.clear()  # no clean shutdown: the next load recovers
    reloaded.shutdown()
