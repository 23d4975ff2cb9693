"""`Deadlines`: the timers of one coordinator (session timeouts, rebalance timeouts, the initial rebalance
delay, pending-sync timeouts) in one heap, in monotonic milliseconds (Kafka's timer wheel, for the few
thousand deadlines a partition's groups arm).

Nothing runs by itself: the broker's group timer calls `expire_due()` at `next_deadline_ms()`, and
`on_armed(deadline_ms)` tells it of every deadline armed, so it can wake earlier than it planned. A
deadline cannot be cancelled; its action checks whether it still applies (a token, the member's current
deadline) and does nothing otherwise. Event loop only.
"""

import heapq
import itertools
from collections.abc import Callable

from brokerd.clock import Clock


class Deadlines:
    def __init__(self, clock: Clock, on_armed: Callable[[int], None] | None = None) -> None:
        self._clock = clock
        self._on_armed = on_armed
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._sequence = itertools.count()

    def arm(self, deadline_ms: int, action: Callable[[], None]) -> None:
        """Run `action()` once `expire_due` runs at or after `deadline_ms` (monotonic ms)."""
        heapq.heappush(self._heap, (deadline_ms, next(self._sequence), action))
        if self._on_armed is not None:
            self._on_armed(deadline_ms)

    def arm_in(self, delay_ms: int, action: Callable[[], None]) -> None:
        """`arm` at now + `delay_ms`."""
        self.arm(self._clock.monotonic_ms() + delay_ms, action)

    def token(self) -> int:
        """A fresh token, for an action to recognise whether it is still the current one."""
        return next(self._sequence)

    def next_deadline_ms(self) -> int | None:
        """The earliest armed deadline (monotonic ms), or None."""
        return self._heap[0][0] if self._heap else None

    def expire_due(self) -> None:
        """Run every deadline at or before `clock.monotonic_ms()` (stale ones are no-ops)."""
        now = self._clock.monotonic_ms()
        while self._heap and self._heap[0][0] <= now:
            _, _, action = heapq.heappop(self._heap)
            action()

    def clear(self) -> None:
        self._heap.clear()
