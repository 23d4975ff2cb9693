"""`brokerd.loop_priority`: when the event-loop thread is real-time (table-driven, `next_realtime`), and against the
kernel's own view of each thread's policy: the loop thread enters SCHED_FIFO, a thread it starts does not, a busy loop
leaves real time with the broker's slice and a light one comes back; a broker with `strom.sched.loop.priority` runs
its loop thread real-time and its other threads under SCHED_OTHER, and one without it runs none real-time."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brokerd.loop_priority import CPU_SHARE_CAP, next_realtime
from tests.support.broker import standalone_broker
from tests.support.polling import wait_until
from tests.support.sched_slices import REALTIME_PERMITTED, REPORTED, policy

ROOT = Path(__file__).resolve().parents[2]
needs_realtime = pytest.mark.skipif(not REALTIME_PERMITTED, reason="SCHED_FIFO needs Linux and CAP_SYS_NICE")


@pytest.mark.parametrize(("realtime", "share", "expected"), [
    (True, 0.0, True),
    (True, CPU_SHARE_CAP, True),
    (True, CPU_SHARE_CAP + 0.01, False),
    (True, 1.0, False),
    (False, 1.0, False),
    (False, CPU_SHARE_CAP, False),
    (False, CPU_SHARE_CAP / 2, False),
    (False, CPU_SHARE_CAP / 2 - 0.01, True),
    (False, 0.0, True),
], ids=["idle stays", "at the cap stays", "over the cap leaves", "busy leaves", "busy stays out",
        "at the cap stays out", "at half the cap stays out", "under half the cap comes back", "idle comes back"])
def test_when_the_loop_thread_is_realtime(realtime, share, expected):
    assert next_realtime(realtime, share) is expected


GUARDED_LOOP = """
import asyncio, json, os, sys, threading, time
from pathlib import Path
from brokerd.loop_priority import LoopPriority
from tests.support.sched_slices import REPORTED, policy, slice_ns

async def until(condition):
    deadline = time.monotonic() + 30
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)

async def main():
    guard = LoopPriority(1, int(sys.argv[1]), interval_s=0.1)
    seen = {"started": guard.start(asyncio.get_running_loop()), "entered": policy(0) == os.SCHED_FIFO}
    child = []
    thread = threading.Thread(target=lambda: child.append(policy(0)))
    thread.start(); thread.join()
    seen["child other"] = child[0] == os.SCHED_OTHER
    deadline = time.monotonic() + 30
    while guard.realtime and time.monotonic() < deadline:  # busy: 10 ms of CPU per loop step
        end = time.thread_time() + 0.01
        while time.thread_time() < end:
            pass
        await asyncio.sleep(0)
    seen["left"] = policy(0) == os.SCHED_OTHER
    seen["slice"] = slice_ns(Path("/proc/thread-self/sched")) if REPORTED else None
    await until(lambda: guard.realtime)  # light again
    seen["back"] = policy(0) == os.SCHED_FIFO
    print(json.dumps(seen))

asyncio.run(main())
"""


@needs_realtime
def test_a_busy_loop_leaves_realtime_with_its_slice_and_a_light_one_comes_back():
    done = subprocess.run([sys.executable, "-c", GUARDED_LOOP, "300"], capture_output=True, text=True, check=True,
                          cwd=ROOT, timeout=120)
    seen = json.loads(done.stdout)
    assert seen == {"started": True, "entered": True, "child other": True, "left": True,
                    "slice": 300_000 if REPORTED else None, "back": True}, done.stderr


def thread_ids(pid: int) -> list[int]:
    return [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]


@needs_realtime
@pytest.mark.parametrize(("configured", "loop_policy"), [({"strom.sched.loop.priority": "1"}, os.SCHED_FIFO),
                                                        ({}, os.SCHED_OTHER)], ids=["priority 1", "default"])
def test_a_broker_runs_only_its_loop_thread_realtime_and_only_when_asked(tmp_path, configured, loop_policy):
    with standalone_broker(tmp_path, configured) as broker:
        pid = broker.process.pid
        wait_until(lambda: len(thread_ids(pid)) > 1, timeout_s=30, message="the broker's worker threads")
        others = {policy(tid) for tid in thread_ids(pid) if tid != pid}
        assert (policy(pid), others) == (loop_policy, {os.SCHED_OTHER})
