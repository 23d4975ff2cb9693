"""The kernel's own view of CPU slices (`se.slice` in /proc/…/sched, Linux 6.12+ with EEVDF), for the tests of
`brokerd.sched_slice` and of `make run`."""

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
