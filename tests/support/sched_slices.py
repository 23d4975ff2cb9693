"""The kernel's own view of CPU slices (`se.slice` in /proc/…/sched, Linux 6.12+ with EEVDF) and of scheduling
policies, for the tests of `brokerd.sched_slice`, `brokerd.loop_priority` and `make run`."""

import os
import subprocess
import sys
from pathlib import Path

REPORTED = sys.platform == "linux" and "se.slice" in Path("/proc/self/sched").read_text()
"""Whether this kernel reports slices (where it does not, there is nothing to check)."""


def slice_ns(sched: Path) -> int:
    """`se.slice` (ns) from a /proc/…/sched file."""
    return int(next(line for line in sched.read_text().splitlines() if line.startswith("se.slice")).split(":")[1])


def slices_ns(pid: int) -> set[int]:
    """`se.slice` (ns) of every thread of process `pid`."""
    return {slice_ns(task / "sched") for task in Path(f"/proc/{pid}/task").iterdir()}


REALTIME_PERMITTED = sys.platform == "linux" and subprocess.run(
    [sys.executable, "-c", "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"],
    capture_output=True).returncode == 0
"""Whether this process may make a thread real-time (Linux, CAP_SYS_NICE): where it may not, a broker's loop thread
stays under SCHED_OTHER (`brokerd.loop_priority`), and there is nothing to check."""


def policy(tid: int) -> int:
    """The kernel's scheduling policy of thread `tid` (0: the caller), without the reset-on-fork flag."""
    return os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK
