"""`wait_resolved`: await a future for at most a given time, with one loop timer instead of an `asyncio.timeout`
scope — the waits on the acks=all round (a produce waiting for the high watermark, a follower's fetch parked in its
session or the fetch purgatory, the replica fetcher's request in `brokerd.client`) each take one per round.

An `asyncio.timeout` scope is a `Timeout` object, a task lookup, a timer and a cancellation turned into
TimeoutError; here the timer resolves the future itself with `TIMED_OUT`. Measured on this project's machine
(Python 3.11, 200,000 waits each on a future another callback resolves): 9.1 µs a wait in a timeout scope, 6.6 µs
with the timer, 4.5-5.2 µs with neither. The future's other resolvers must check `done()` first (the timer may have
resolved it). Event loop only.
"""

import asyncio

TIMED_OUT = object()
"""The result the timer gives a future nobody resolved in time."""


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(TIMED_OUT)


async def wait_resolved(future: asyncio.Future, timeout_s: float) -> bool:
    """Await `future` (resolved by a callback of the caller's, with a result that is not `TIMED_OUT`) for at most
    `timeout_s`; True if it was resolved in time, False if the timer resolved it. Cancelling the awaiting task
    cancels `future`."""
    timer = asyncio.get_running_loop().call_later(timeout_s, _expire, future)
    try:
        return await future is not TIMED_OUT
    finally:
        timer.cancel()
