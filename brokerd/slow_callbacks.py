"""Slow-callback logging (`strom.loop.slow.callback.ms`): every event-loop callback that holds the broker's
loop longer than the threshold is logged, as asyncio's debug mode does with `loop.slow_callback_duration`.

The difference from asyncio's debug mode, and why: asyncio times a callback by wall clock, so on a busy
machine a callback that was merely preempted by another process is reported as slow (measured here: a
heartbeat step "took" 10 ms at load 9 on 2 cores), and debug mode's per-callback traceback capture costs
more than the callbacks it watches. This watch times the same thing — each `asyncio.Handle` run, which
includes every task step — but subtracts the time the loop's thread waited for a CPU (Linux
`/proc/thread-self/schedstat`, field 2), so what it reports is time the broker itself held the loop:
computing, blocking in a system call (a read, an fsync), waiting for the GIL, or collecting garbage.
Without schedstat (not Linux) it falls back to wall time.

Garbage collections that take the threshold or more are logged too (they run inside whatever callback
allocated last, so they are also part of that callback's time).

Logged on logger `brokerd.slow_callbacks` at WARNING, one line per slow callback:
`slow callback: <what> held the loop 7.1 ms (wall 9.3 ms)`; `<what>` names a task step by task name and the
coroutine's place (`KafkaConnection._process at brokerd/server/connection.py:125`). Debug aid and the test
guard of issue 18; costs ~10 us per callback, so it is off by default. Installed once per process, for the
thread that calls `install`.
"""

import asyncio
import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

SCHEDSTAT = "/proc/thread-self/schedstat"
_REPO = str(Path(__file__).resolve().parents[1]) + os.sep


def _describe(handle: asyncio.Handle) -> str:
    """A task step as its task's name and where its coroutine stands; any other callback by its repr."""
    callback = handle._callback  # noqa: SLF001 - the callback a Handle runs is what we name
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        coro = task.get_coro()
        frame = getattr(coro, "cr_frame", None)
        where = f" at {frame.f_code.co_filename.removeprefix(_REPO)}:{frame.f_lineno}" if frame else ""
        return f"task {task.get_name()!r} {getattr(coro, '__qualname__', coro)}{where}"
    return repr(handle)


def _runqueue_wait_reader() -> Callable[[], int] | None:
    """A function returning this thread's total runqueue wait in ns, or None where schedstat is missing."""
    try:
        fd = os.open(SCHEDSTAT, os.O_RDONLY)
    except OSError:
        return None

    def waited_ns() -> int:
        return int(os.pread(fd, 64, 0).split()[1])

    try:
        waited_ns()
    except (OSError, ValueError, IndexError):
        os.close(fd)
        return None
    return waited_ns


def install(threshold_ms: float) -> Callable[[], None]:
    """Log every callback run on this thread that holds the loop for `threshold_ms` or more (see module).
    Returns the function that uninstalls the watch."""
    threshold_s = threshold_ms / 1000
    waited_ns = _runqueue_wait_reader()
    watched = threading.get_ident()
    run = asyncio.Handle._run  # noqa: SLF001 - the one place every callback and task step passes
    clock = time.perf_counter

    def timed_run(handle: asyncio.Handle) -> None:
        if threading.get_ident() != watched:
            return run(handle)
        started, waited = clock(), waited_ns() if waited_ns else 0
        try:
            return run(handle)
        finally:
            wall = clock() - started
            if wall >= threshold_s:
                held = wall - ((waited_ns() - waited) / 1e9 if waited_ns else 0.0)
                if held >= threshold_s:
                    log.warning("slow callback: %s held the loop %.1f ms (wall %.1f ms)", _describe(handle),
                                held * 1000, wall * 1000)

    collection_started = (0.0, 0)

    def timed_collection(phase: str, info: dict[str, int]) -> None:
        nonlocal collection_started
        if threading.get_ident() != watched:
            return
        if phase == "start":
            collection_started = (clock(), waited_ns() if waited_ns else 0)
            return
        started, waited = collection_started
        wall = clock() - started
        held = wall - ((waited_ns() - waited) / 1e9 if waited_ns else 0.0)
        if held >= threshold_s:
            log.warning("slow callback: garbage collection of generation %d (%d collected) held the loop %.1f ms "
                        "(wall %.1f ms)", info["generation"], info["collected"], held * 1000, wall * 1000)

    asyncio.Handle._run = timed_run  # noqa: SLF001
    gc.callbacks.append(timed_collection)

    def uninstall() -> None:
        asyncio.Handle._run = run  # noqa: SLF001
        gc.callbacks.remove(timed_collection)

    return uninstall
