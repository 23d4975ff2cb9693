"""The event-loop thread as a real-time task while it is light (`strom.sched.loop.priority`; Linux; issue 18).

An acks=all produce waits for several short wake-ups in a row on different brokers (the leader's append, each
follower's fetch answer and append, the fetch that moves the high watermark), each ~0.3 ms of CPU. On CPUs shared
with the control plane and the clients, a woken broker under SCHED_OTHER first waits for the running task (a web
request, a client's polling thread) to be preempted: on `make run`'s cluster at 10,000 acks=all records/s on 2 CPUs,
0.09-0.22 ms per wake-up on average, milliseconds now and then, and those waits made the produce latency's tail. Under
SCHED_FIFO a woken loop thread runs at once, before every SCHED_OTHER task on its CPU: the brokers' wait for a CPU fell
from 0.30-0.62 to 0.05-0.06 s per s (three brokers together) and p99's median from 9.0 to 5.0 ms (README, "The
brokers' loop threads real-time").

Only the loop thread, and only while it is light: a real-time thread keeps its CPU for as long as it has work, so a
busy broker would starve its neighbours (the kernel leaves SCHED_OTHER tasks 5 % of each CPU). `LoopPriority.check`,
called by the loop every `CHECK_INTERVAL_S`, measures the thread's CPU share over the interval (`time.thread_time`):
above `CPU_SHARE_CAP` it returns the thread to SCHED_OTHER with the broker's slice (`brokerd.sched_slice`), and it
makes it real-time again once its share has been below `CPU_SHARE_CAP / 2` for an interval (`next_realtime`). Threads
the loop thread starts (worker threads: log creation and flushes, schema loading) run under SCHED_OTHER at the
kernel's default slice (SCHED_RESET_ON_FORK). Where the kernel refuses (no CAP_SYS_NICE, not Linux) the broker logs
one warning and runs as before. Event loop only.
"""

import asyncio
import logging
import os
import time

from brokerd import sched_slice
from brokerd.config import MAX_LOOP_PRIORITY

CHECK_INTERVAL_S = 1.0
CPU_SHARE_CAP = 0.5
"""The share of one CPU above which the loop thread leaves real time (0.25-0.3 under 10,000 acks=all records/s)."""

log = logging.getLogger("brokerd.loop_priority")


def next_realtime(realtime: bool, cpu_share: float) -> bool:
    """Whether the loop thread should be real-time for the next interval, given whether it is now and the share of a
    CPU it used over the last one: out above the cap, back in below half of it, else as it is."""
    if realtime:
        return cpu_share <= CPU_SHARE_CAP
    return cpu_share < CPU_SHARE_CAP / 2


def _enter_realtime(priority: int) -> bool:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
    except (OSError, AttributeError):  # AttributeError: no such call outside Linux
        return False
    return True


class LoopPriority:
    """The calling (event-loop) thread's scheduling policy: SCHED_FIFO at `priority` while light, else SCHED_OTHER
    with a `slice_us` slice (0: the kernel's default)."""

    def __init__(self, priority: int, slice_us: int, interval_s: float = CHECK_INTERVAL_S) -> None:
        assert 1 <= priority <= MAX_LOOP_PRIORITY, priority
        self.priority = priority
        self.slice_us = slice_us
        self.interval_s = interval_s
        self.realtime = False
        self._since_wall = self._since_cpu = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Make the thread real-time and check it every `interval_s` from now on; False (and nothing scheduled) if
        the kernel refused."""
        if not _enter_realtime(self.priority):
            return False
        self.realtime = True
        self._since_wall, self._since_cpu = time.monotonic(), time.thread_time()
        loop.call_later(self.interval_s, self.check)
        return True

    def check(self) -> None:
        """Measure the last interval's CPU share and move in or out of real time (`next_realtime`); then again after
        `interval_s`."""
        wall, cpu = time.monotonic(), time.thread_time()
        share = (cpu - self._since_cpu) / max(wall - self._since_wall, 1e-9)
        self._since_wall, self._since_cpu = wall, cpu
        wanted = next_realtime(self.realtime, share)
        if wanted and not self.realtime:
            self.realtime = _enter_realtime(self.priority)
            if self.realtime:
                log.info("event loop real-time again (SCHED_FIFO %d): %.2f of a CPU over the last %.1f s",
                         self.priority, share, self.interval_s)
        elif not wanted and self.realtime:
            self.realtime = not sched_slice.leave_realtime(self.slice_us)
            if not self.realtime:
                log.info("event loop back under SCHED_OTHER: %.2f of a CPU over the last %.1f s (cap %.2f)",
                         share, self.interval_s, CPU_SHARE_CAP)
        asyncio.get_running_loop().call_later(self.interval_s, self.check)


def install(loop: asyncio.AbstractEventLoop, priority: int, slice_us: int) -> LoopPriority | None:
    """From the loop's thread: real time at `priority` (0: nothing to do) under `LoopPriority`'s guard; None if off
    or refused (logged)."""
    if not priority:
        return None
    guard = LoopPriority(priority, slice_us)
    if guard.start(loop):
        return guard
    log.warning("strom.sched.loop.priority: the kernel refused SCHED_FIFO %d for the event loop (CAP_SYS_NICE, "
                "Linux only); it runs under SCHED_OTHER", priority)
    return None
