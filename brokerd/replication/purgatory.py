"""Delayed produce (Kafka's produce purgatory): acks=all waits parked per partition until the high
watermark passes their last offset, the partition changes role, or the request times out.

Event-driven: `Partition` reports every HW move through the replica manager, which calls `complete`;
nothing polls. Event loop only.
"""

import asyncio

TopicPartition = tuple[str, int]


class DelayedProduce:
    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, list[tuple[int, asyncio.Future[None]]]] = {}

    def watch(self, key: TopicPartition, required_high_watermark: int) -> asyncio.Future[None]:
        """A future resolved once `complete(key, hw)` sees hw >= `required_high_watermark`, or on `abort`."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append((required_high_watermark, future))
        return future

    def complete(self, key: TopicPartition, high_watermark: int) -> None:
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

    def pending(self) -> int:
        return sum(len(w) for w in self._waiting.values())
