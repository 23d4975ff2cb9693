"""The replica manager's two purgatories (Kafka's `DelayedOperationPurgatory`s, keyed by partition): requests
parked until something happens to a partition, woken by events, never by polling. Event loop only.

* `FetchPurgatory`: fetch long polls (fewer than `min_bytes` available) wait until an append to one of the
  partitions they read, or their `max_wait`.
* `ProducePurgatory`: acks=all appends wait until the high watermark passes their last offset, or the
  partition changes role (`abort`: the waiter re-checks the partition), or the request times out.

`Partition` reports appends and high-watermark moves to the replica manager, which calls `notify` and
`complete`. Issue 18 (tail latency of acks=all) and throttles belong here.
"""

import asyncio
from collections.abc import Iterable

from brokerd.types import Offset, TopicPartition
from brokerd.waits import wait_resolved


class FetchPurgatory:
    """Fetches parked until an append to any partition they read."""

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
            return await wait_resolved(future, timeout_s)
        finally:
            for key in keys:
                parked = self._waiters.get(key)
                if parked is not None:
                    parked.discard(future)
                    if not parked:
                        del self._waiters[key]

    def notify(self, key: TopicPartition) -> None:
        """New data in `key` (or it changed role): wake every fetch parked on it."""
        parked = self._waiters.pop(key, None)
        if parked:
            for future in parked:
                if not future.done():
                    future.set_result(None)


class ProducePurgatory:
    """acks=all appends parked until the high watermark reaches what each needs."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, list[tuple[Offset, asyncio.Future[None]]]] = {}

    def watch(self, key: TopicPartition, required_high_watermark: Offset) -> asyncio.Future[None]:
        """A future resolved once `complete(key, hw)` sees hw >= `required_high_watermark`, or on `abort`."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append((required_high_watermark, future))
        return future

    def complete(self, key: TopicPartition, high_watermark: Offset) -> None:
        waiting = self._waiting.get(key)
        if not waiting:
            return
        remaining = []
        for required, future in waiting:
            if future.done():
                continue
            if required <= high_watermark:
                future.set_result(None)
            else:
                remaining.append((required, future))
        if remaining:
            self._waiting[key] = remaining
        else:
            del self._waiting[key]

    def abort(self, key: TopicPartition) -> None:
        """Wake every waiter of `key` (leadership changed); each re-checks the partition's state."""
        for _, future in self._waiting.pop(key, ()):
            if not future.done():
                future.set_result(None)
