"""Kafka's replication throttles (ops.html "rep-throttle", kafkaspec.replication_throttles): on the follower
side `follower.replication.throttled.rate` with the topics' `follower.replication.throttled.replicas`, on the
leader side `leader.replication.throttled.rate` with `leader.replication.throttled.replicas`.

A `ReplicationQuota` is one broker's token bucket for one side: `rate` bytes/s, at most `BURST_S`
seconds' worth saved up. Fetchers (follower side) and the Fetch handler answering a replica (leader side)
ask it, per partition, whether the partition is throttled — named for this broker in its topic's list (or
`*`) and the fetching replica not in the ISR (as in Kafka, an in-sync follower is never slowed down) — and
then cap the bytes of throttled partitions at `available()`, leaving them out while it is 0, and `record()`
what they moved. So bytes/s of throttled traffic ≤ rate over any window
longer than BURST_S, whatever the number of fetchers (they share the bucket). Event loop only.
"""

import time
from collections.abc import Callable, Collection, Mapping

from brokerd.types import TopicPartition
from kafkaspec.replication_throttles import ALL_PARTITIONS, UNTHROTTLED

__all__ = ("BURST_S", "ReplicationQuota")

BURST_S = 1.0
"""Seconds of unused rate the bucket saves up (Kafka's quota sample window). It must exceed a fetch round
trip, or time spent waiting for a response would be lost to the cap and the rate would fall short of the
limit (measured with 0.1 s: 15 % short on a loaded 2-core machine)."""


class ReplicationQuota:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.rate = UNTHROTTLED
        """bytes/s; UNTHROTTLED (Long.MAX_VALUE) means no throttle."""
        self._throttled: Mapping[str, Collection[int]] = {}
        self._tokens = 0.0
        self._at = clock()

    def configure(self, rate: int, throttled: Mapping[str, Collection[int]]) -> None:
        """The broker's rate and, per topic, the partitions its replicas here are throttled for
        (`ALL_PARTITIONS` for `*`)."""
        if rate != self.rate:
            self._refill()
            self._tokens = min(self._tokens, rate * BURST_S)
        self.rate, self._throttled = rate, throttled

    @property
    def throttled(self) -> Mapping[str, Collection[int]]:
        """What `configure` was last given: per topic, the partitions throttled here."""
        return self._throttled

    @property
    def limited(self) -> bool:
        """A rate is set: some replicas may be throttled (`is_throttled` is False for every one otherwise)."""
        return self.rate < UNTHROTTLED

    def is_throttled(self, key: TopicPartition, in_sync: bool) -> bool:
        if in_sync or self.rate >= UNTHROTTLED:
            return False
        partitions = self._throttled.get(key[0])
        return partitions is not None and (partitions is ALL_PARTITIONS or key[1] in partitions)

    def _refill(self) -> None:
        now = self._clock()
        if self.rate < UNTHROTTLED:
            self._tokens = min(self._tokens + (now - self._at) * self.rate, self.rate * BURST_S)
        self._at = now

    def available(self) -> int:
        """Bytes a throttled fetch may ask for now (0: leave throttled partitions out)."""
        self._refill()
        return max(int(self._tokens), 0)

    def record(self, size: int) -> None:
        """`size` bytes of throttled partitions arrived (may overdraw: a whole batch is never split)."""
        self._refill()
        self._tokens -= size

    def delay_s(self) -> float:
        """Seconds until `available()` is positive again."""
        self._refill()
        return 0.0 if self._tokens > 0 else (1 - self._tokens) / self.rate
