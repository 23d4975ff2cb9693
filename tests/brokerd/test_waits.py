"""`wait_resolved`: True when another callback resolves the future in time, False when the time runs out (the
future then holds `TIMED_OUT`, so a late resolver that checks `done()` leaves it alone); either way its timer is
gone from the loop; cancelling the waiting task cancels the future and the timer."""

import asyncio

import pytest

from brokerd.waits import TIMED_OUT, wait_resolved


def _timers(loop: asyncio.AbstractEventLoop) -> int:
    """Timers still due on `loop` (cancelled ones excluded)."""
    return sum(not handle.cancelled() for handle in loop._scheduled)  # type: ignore[attr-defined]


def test_resolved_in_time_is_true_and_leaves_no_timer():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        loop.call_soon(future.set_result, None)
        assert await wait_resolved(future, 60.0) is True
        assert _timers(loop) == 0

    asyncio.run(scenario())


def test_already_resolved_is_true_at_once():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        future.set_result(None)
        assert await wait_resolved(future, 0.0) is True

    asyncio.run(scenario())


def test_the_time_running_out_is_false_and_marks_the_future():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        started = loop.time()
        assert await wait_resolved(future, 0.05) is False
        assert loop.time() - started >= 0.05
        assert future.result() is TIMED_OUT
        assert _timers(loop) == 0

    asyncio.run(scenario())


def test_cancelling_the_waiter_cancels_the_future_and_its_timer():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        waiting = loop.create_task(wait_resolved(future, 60.0))
        await asyncio.sleep(0)  # the task is now awaiting the future
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert future.cancelled()
        assert _timers(loop) == 0

    asyncio.run(scenario())
