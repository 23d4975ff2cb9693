"""Long-lived objects frozen out of garbage collection as they accumulate while the broker serves (issue 17).

A full (generation 2) collection walks every tracked object that is not frozen, on whichever thread allocated last,
usually the event loop's. The broker freezes what exists once it serves (`Broker.start`) and after each large batch
of new replicas (`ReplicaManager._create_off_loop`), but it goes on building objects that live as long as their
partitions: its followers' fetch sessions (a cached position per led partition), the Metadata answer's topic entries
and their encodings, the follower states of new leaderships. At 100,000 partitions every full collection walked
those again (`bench.full_collection`).

Policy (`install`): a full collection that took `FREEZE_AFTER_MS` or more ends with `gc.freeze()` at the event loop's
next step, so the objects it walked and kept are not walked again; later full collections cost what accumulated
since. Trade-off, as for every freeze: a frozen object is still freed when its last reference goes, but a reference
cycle among frozen objects is never collected (asyncio tasks of connections open at the time, for instance), and
cyclic garbage made between the collection and the freeze is kept. Freezes follow slow collections only, which
freezing makes rare.
"""

import asyncio
import gc
import time
from collections.abc import Callable

FREEZE_AFTER_MS = 20.0
"""A full collection at least this long (wall ms) freezes what it kept."""


def install(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """Apply the policy to the collections of this process, freezing on `loop`; returns the function that removes
    it."""
    started = 0.0

    def on_collection(phase: str, info: dict[str, int]) -> None:
        nonlocal started
        if info["generation"] != 2:
            return
        if phase == "start":
            started = time.perf_counter()
        elif 1000 * (time.perf_counter() - started) >= FREEZE_AFTER_MS and not loop.is_closed():
            loop.call_soon_threadsafe(gc.freeze)

    gc.callbacks.append(on_collection)
    return lambda: gc.callbacks.remove(on_collection)
