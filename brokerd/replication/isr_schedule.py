"""`IsrCheckSchedule`: when each partition led here is next due for the ISR check, so that the periodic check
visits only the partitions where a follower can have fallen out of sync by now, not every hosted replica every
`ISR_CHECK_INTERVAL_MS` (a pass over 100,000 replicas held a broker's loop for 1.6-2.6 s, four times a second).

A min-heap of (due ms, partition) with lazy deletion: `_due` holds each scheduled partition's one valid due time;
a heap entry whose time differs from it is stale and skipped when it comes up (rescheduling pushes a new entry
rather than searching the heap). Invariant: a partition is in `_due` iff the heap holds an entry (due, key) with
`_due[key] == due`; the heap holds at most one stale entry per reschedule since its last pop. Times are monotonic
milliseconds. Event loop only.
"""

import heapq

from brokerd.types import TopicPartition


class IsrCheckSchedule:
    __slots__ = ("_heap", "_due")

    def __init__(self) -> None:
        self._heap: list[tuple[int, TopicPartition]] = []
        self._due: dict[TopicPartition, int] = {}

    def __len__(self) -> int:
        """How many partitions are scheduled."""
        return len(self._due)

    def schedule(self, key: TopicPartition, due_ms: int) -> None:
        """Visit `key` at `due_ms`, replacing the time it had."""
        if self._due.get(key) != due_ms:
            self._due[key] = due_ms
            heapq.heappush(self._heap, (due_ms, key))

    def schedule_by(self, key: TopicPartition, due_ms: int) -> None:
        """Visit `key` at `due_ms` at the latest (an earlier time it had stays)."""
        current = self._due.get(key)
        if current is None or due_ms < current:
            self.schedule(key, due_ms)

    def pop_due(self, now_ms: int, limit: int) -> list[TopicPartition]:
        """Up to `limit` partitions due at `now_ms`, earliest first, unscheduled: the caller schedules each again
        from its state once it looked at it."""
        heap, due, popped = self._heap, self._due, []
        while heap and heap[0][0] <= now_ms and len(popped) < limit:
            at, key = heapq.heappop(heap)
            if due.get(key) == at:
                del due[key]
                popped.append(key)
        return popped

    def next_due_ms(self) -> int | None:
        """The earliest due time scheduled (None: nothing is); stale heap entries are dropped on the way."""
        heap, due = self._heap, self._due
        while heap and due.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
