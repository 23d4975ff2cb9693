"""`brokerd.slow_callbacks`: a callback that holds the loop past the threshold is logged with what it was (a
task step by task name and coroutine); quick callbacks are not."""

import asyncio
import logging
import time

from brokerd import slow_callbacks

THRESHOLD_MS = 20


def run_with_watch(main) -> None:
    uninstall = slow_callbacks.install(THRESHOLD_MS)
    try:
        asyncio.run(main())
    finally:
        uninstall()


def test_a_task_step_that_blocks_is_logged_by_task_name_and_coroutine(caplog):
    async def blocking_step() -> None:
        time.sleep(3 * THRESHOLD_MS / 1000)  # blocking on purpose: what the watch must catch
        await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.create_task(blocking_step(), name="the-blocker")

    with caplog.at_level(logging.WARNING, logger=slow_callbacks.__name__):
        run_with_watch(main)
    slow = [r.getMessage() for r in caplog.records if r.name == slow_callbacks.__name__]
    assert len(slow) == 1, slow
    assert "task 'the-blocker'" in slow[0] and "blocking_step" in slow[0], slow[0]


def test_quick_callbacks_and_waits_are_not_logged(caplog):
    async def main() -> None:
        for _ in range(200):
            await asyncio.sleep(0)
        await asyncio.sleep(3 * THRESHOLD_MS / 1000)  # waiting is not holding the loop

    with caplog.at_level(logging.WARNING, logger=slow_callbacks.__name__):
        run_with_watch(main)
    assert [r.getMessage() for r in caplog.records if r.name == slow_callbacks.__name__] == []
