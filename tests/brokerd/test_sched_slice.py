"""`brokerd.sched_slice` against the kernel's own view of each thread's slice (`se.slice` in /proc/…/sched): the
thread that asks and the threads it starts later run with the slice asked for and keep their nice value; every
thread of a running broker has `strom.sched.slice.us`, or the kernel's default without it, whatever slice the process
that started it had."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from brokerd import sched_slice
from tests.support.broker import standalone_broker
from tests.support.sched_slices import REPORTED, slice_ns, slices_ns

pytestmark = pytest.mark.skipif(not REPORTED, reason="custom slices are Linux's (6.12+); the kernel reports them "
                                                     "as se.slice")

ASK = """
import os, sys, threading
from pathlib import Path
from brokerd import sched_slice
from tests.support.sched_slices import slice_ns
own = Path("/proc/thread-self/sched")
taken = sched_slice.request(int(sys.argv[1]))
started = []
thread = threading.Thread(target=lambda: started.append(slice_ns(own)))
thread.start(); thread.join()
print(taken, slice_ns(own), started[0], os.getpriority(os.PRIO_PROCESS, 0))
"""


def test_the_asking_thread_and_those_it_starts_run_with_the_slice_at_their_nice_value():
    default = slices_ns(os.getpid())
    done = subprocess.run(["nice", "-n", "3", sys.executable, "-c", ASK, "300"], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    taken, asking, started, nice = done.stdout.split()
    assert taken == "True"
    assert int(asking) == int(started) == 300_000 not in default
    assert int(nice) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)


@pytest.mark.parametrize(("configured", "expected_ns"), [({"strom.sched.slice.us": "250"}, 250_000), ({}, None)],
                         ids=["250 us", "default"])
def test_every_thread_of_a_broker_has_its_configured_slice_whatever_it_inherited(tmp_path, configured, expected_ns):
    assert sched_slice.request(0)
    default_ns = slice_ns(Path("/proc/thread-self/sched"))  # the kernel's
    assert sched_slice.request(5_000)  # what `make run`'s launcher gives the processes it starts
    try:
        with standalone_broker(tmp_path, configured) as broker:
            seen = slices_ns(broker.process.pid)
    finally:
        assert sched_slice.request(0)
    assert seen == {expected_ns or default_ns}
