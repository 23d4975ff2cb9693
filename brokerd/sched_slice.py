"""A process's CPU slice under Linux's EEVDF scheduler (6.12 and later; elsewhere nothing changes): short for
brokers that serve acks=all producers on shared CPUs, long for the work beside them.

A broker's work comes in short wake-ups — a produce, a follower's fetch, the next fetch that moves the high
watermark — each ~0.15 ms of CPU, and an acks=all produce waits for several of them in a row on different
brokers. When the CPUs are busy, a woken task normally waits until the running one has used its slice (1.4 ms by
default on 2 CPUs, more on larger machines). Measured with `perf sched timehist` on `make run`'s cluster at 10,000
acks=all records/s on 2 CPUs: each broker waited 1-5 ms for a CPU ~3 times a second, behind a web request, the
controller or the client's threads, and such waits made the produce latency's p99; with a 100 µs slice, ~1 time a
second, the longest 2.6 ms (`perf sched record -k CLOCK_MONOTONIC -- sleep 6` in the middle of a run). A task that
asks for a shorter slice (`sched_setattr`, SCHED_OTHER with `sched_runtime`) gets an earlier deadline when it wakes
and preempts a task with a longer one; its share of the CPU is unchanged (the slice sets how often it may run, not
how much). A task with a longer slice than the default is preempted by every other task's wake-up.

The trade-off: a broker that preempts also preempts the clients on its CPUs. With a consumer on the same 2 CPUs
reading as fast as it can (`make bench`'s consume phase), the broker was switched out 4 times as often and spent
twice the CPU per record (0.22 → 0.44 CPU-s per 1M, 920 → 780 MB/s; the same with a 1 ms slice, none with 5 ms).
So a broker runs with the kernel's default unless `strom.sched.slice.us` says otherwise. `make run`, whose brokers
share two CPUs with the control plane and the user's clients, asks for 100 µs for its brokers and 5 ms for every
other process it starts (`scripts/run_local.py`).

Threads and processes inherit the slice of the thread that creates them (across exec too), so `request` is called
on the main thread before any other starts. The kernel takes 100 µs to 100 ms; a kernel before 6.12 ignores the
value. A process in another scheduling class (SCHED_BATCH, a real-time one) keeps it; `leave_realtime` is how the
event-loop thread returns from real time (`brokerd.loop_priority`).
"""

import ctypes
import os
import platform
import struct

_SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
_SCHED_OTHER = 0
_SCHED_FLAG_RESET_ON_FORK = 0x01
_ATTR = struct.Struct("IIQiIQQQ")
"""struct sched_attr as of Linux 3.14 (SCHED_ATTR_SIZE_VER0, 48 bytes): size, policy, flags, nice, priority,
runtime (ns), deadline, period."""


def request(slice_us: int) -> bool:
    """Ask for a `slice_us` slice (0: the kernel's default) for the calling thread and all it starts from now on,
    keeping its nice value; True if the kernel took the request, False where there is no such call (not Linux, an
    unknown architecture), the thread is in another scheduling class than SCHED_OTHER, or the kernel refused."""
    if platform.system() != "Linux" or os.sched_getscheduler(0) != os.SCHED_OTHER:
        return False
    return _set_other(slice_us, 0)


def leave_realtime(slice_us: int) -> bool:
    """Put the calling thread, real-time with SCHED_RESET_ON_FORK (`brokerd.loop_priority`), back under SCHED_OTHER
    with a `slice_us` slice (0: the kernel's default) at its nice value, still resetting the threads it starts to
    the kernel's defaults; True if the kernel took it."""
    return platform.system() == "Linux" and _set_other(slice_us, _SCHED_FLAG_RESET_ON_FORK)


def _set_other(slice_us: int, flags: int) -> bool:
    number = _SYS_SCHED_SETATTR.get(platform.machine())
    if number is None:
        return False
    attr = ctypes.create_string_buffer(_ATTR.pack(_ATTR.size, _SCHED_OTHER, flags,
                                                  os.getpriority(os.PRIO_PROCESS, 0), 0, slice_us * 1000, 0, 0))
    # the C library already loaded into this process (no library search: find_library runs ldconfig)
    return ctypes.CDLL(None, use_errno=True).syscall(number, 0, attr, 0) == 0
