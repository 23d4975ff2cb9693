"""Fetch long-poll wake-ups: a fetch parks one future on the partitions it reads; an append to any of
them resolves it (Kafka's delayed-fetch purgatory, keyed by partition). Event loop only.
"""

import asyncio
from collections.abc import Iterable

TopicPartition = tuple[str, int]


class AppendWaiters:
    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}

    async def wait(self, partitions: Iterable[TopicPartition], timeout_s: float) -> bool:
        """Until an append to one of `partitions` or the timeout; True if woken by an append."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        keys = list(partitions)
        for key in keys:
            self._waiters.setdefault(key, set()).add(future)
        try:
            async with asyncio.timeout(timeout_s):
                await future
            return True
        except TimeoutError:
            return False
        finally:
            for key in keys:
                parked = self._waiters.get(key)
                if parked is not None:
                    parked.discard(future)
                    if not parked:
                        del self._waiters[key]

    def notify(self, key: TopicPartition) -> None:
        parked = self._waiters.pop(key, None)
        if parked:
            for future in parked:
                if not future.done():
                    future.set_result(None)
