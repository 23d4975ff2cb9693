"""A short CPU slice for the broker's threads (Linux's EEVDF scheduler, 6.12 and later; elsewhere nothing changes).

A broker's work comes in short wake-ups — a produce, a follower's fetch, the next fetch that moves the high
watermark — each ~0.15 ms of CPU, and an acks=all produce waits for several of them in a row on different
brokers. When the CPUs are busy, a woken task normally waits until the running one has used its slice (1.4 ms by
default on 2 CPUs, more on larger machines). Measured with `perf sched timehist` on `make run`'s cluster at 10,000
acks=all records/s on 2 CPUs: each broker waited 1-5 ms for a CPU ~3 times a second, behind a web request, the
controller or the client's threads, and such waits made the produce latency's p99; with a 100 µs slice, ~1 time a
second, the longest 2.6 ms (`perf sched record -k CLOCK_MONOTONIC -- sleep 6` in the middle of a run). A task that
asks for a shorter slice (`sched_setattr`, SCHED_OTHER with `sched_runtime`) gets an earlier deadline when it wakes
and preempts a task with a longer one; its share of the CPU is unchanged (the slice sets how often it may run, not
how much).

Threads and processes inherit the slice from the thread that creates them, so `request` is called on the main
thread before any other starts. The kernel takes 100 µs to 100 ms; a kernel before 6.12 ignores the value. A
broker started in another scheduling class (SCHED_BATCH, a real-time one) keeps it.
"""

import ctypes
import ctypes.util
import os
import platform
import struct

_SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
_SCHED_OTHER = 0
_ATTR = struct.Struct("IIQiIQQQ")
"""struct sched_attr as of Linux 3.14 (SCHED_ATTR_SIZE_VER0, 48 bytes): size, policy, flags, nice, priority,
runtime (ns), deadline, period."""


def request(slice_us: int) -> bool:
    """Ask for a `slice_us` slice for the calling thread (and all it starts), keeping its nice value; True if the
    kernel took the request, False where there is no such call (not Linux, an unknown architecture), the thread is
    in another scheduling class than SCHED_OTHER, or the kernel refused."""
    number = _SYS_SCHED_SETATTR.get(platform.machine())
    name = ctypes.util.find_library("c")
    if platform.system() != "Linux" or number is None or name is None or os.sched_getscheduler(0) != os.SCHED_OTHER:
        return False
    attr = ctypes.create_string_buffer(_ATTR.pack(_ATTR.size, _SCHED_OTHER, 0, os.getpriority(os.PRIO_PROCESS, 0),
                                                  0, slice_us * 1000, 0, 0))
    return ctypes.CDLL(name, use_errno=True).syscall(number, 0, attr, 0) == 0
