"""SIGKILL a writer process (crash_writer.py) at random moments, many times over the same log, and check
after each kill, by recovering the log, that every fsynced batch is intact and only whole, valid
batches of the writer's sequence follow it (a prefix of what it wrote, nothing else)."""

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from brokerd.clock import ManualClock
from brokerd.storage import LogManager

from .conftest import decode  # noqa: TID252

WRITER = Path(__file__).with_name("crash_writer.py")
REPO = Path(__file__).resolve().parents[3]
KILLS_PER_LOG = 40


def expected_value(batch_number: int, index: int) -> bytes:
    return b"%d/%d:" % (batch_number, index) + bytes([batch_number % 251]) * (batch_number % 97)


def kill_writer_once(data_dir: Path, rng: random.Random) -> int:
    """Run the writer, SIGKILL it after a random number of reports; the highest fsynced offset."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, str(WRITER), str(data_dir), str(rng.randrange(1 << 30))],
                               stdout=subprocess.PIPE, env=env, cwd=REPO)
    fsynced = 0
    try:
        reports_before_kill = rng.randint(0, 25)
        for line in process.stdout:
            kind, offset = line.split()
            if kind == b"fsynced":
                fsynced = max(fsynced, int(offset))
                reports_before_kill -= 1
            if reports_before_kill <= 0:
                break
        process.send_signal(signal.SIGKILL)
        for line in process.stdout:  # reports written before the kill landed are promises too
            kind, offset = line.split()
            if kind == b"fsynced":
                fsynced = max(fsynced, int(offset))
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    assert process.returncode == -signal.SIGKILL, "the writer died of something else"
    return fsynced


def verify(data_dir: Path, fsynced: int) -> int:
    """Recover the log like a restarting broker and check it; returns its log end offset."""
    manager = LogManager([data_dir], {}, ManualClock(), max_open_files=8)
    manager.startup()
    log = manager.get_log("crash", 0)
    assert log.log_end_offset >= fsynced, "an fsynced batch was lost"
    offset, number = 0, 0
    while offset < log.log_end_offset:
        batches = decode(log.read_bytes(log.read(offset, 1 << 20, log.log_end_offset)))
        assert batches
        for base_offset, records in batches:
            assert base_offset == offset
            assert [(r[0], r[1], r[2]) for r in records] == [
                (offset + j, b"%d" % number, expected_value(number, j)) for j in range(number % 7 + 1)]
            offset += len(records)
            number += 1
    assert offset == log.log_end_offset
    manager.handles.clear()  # leave without a clean shutdown: the next writer recovers again
    return log.log_end_offset


def run_kills(tmp_path: Path, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    for kill in range(kills):
        data_dir = tmp_path / f"data-{kill // KILLS_PER_LOG}"  # a fresh log now and then keeps checks short
        verify(data_dir, kill_writer_once(data_dir, rng))


def test_sigkill_mid_append_keeps_every_fsynced_batch(tmp_path):
    run_kills(tmp_path, kills=40, seed=1)


@pytest.mark.slow
def test_sigkill_mid_append_many_times(tmp_path):
    run_kills(tmp_path, kills=200, seed=2)
