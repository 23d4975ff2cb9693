"""The leader's fetch sessions (KIP-227, Kafka's `FetchSessionCache`): what each follower last asked for, so
that its fetches name only the partitions whose position changed and the answers only those with news.

A session is opened by a replica Fetch with session_epoch 0 (a full fetch; its partitions are the session's),
then each incremental fetch carries the session id and the next epoch: its partitions are added or updated
(fetch offset, epoch, max bytes), its forgotten ones dropped, and every partition of the session counts as
fetched at its cached offset. The answer names a partition only when it has records, an error or a diverging
epoch, or when its high watermark or log start offset differ from what this session last sent (`sent_*`).

An idle follower must cost less than one look per partition per fetch, so a fetch looks only at the session's
`changed` partitions. A partition is **quiet** when this broker still leads it in the cached epoch, the follower
is in its ISR and at its log end, and its high watermark and log start offset are as last sent: nothing to
answer, and the follower caught up. Invariant: every partition of a session that is not quiet is in `changed`
(events mark it: `mark_changed` on appends, high-watermark moves, role and ISR changes and log start moves;
requests mark what they name; a slow periodic sweep is the safety net: `sweep_slice`, called `steps` times per
sweep, marks a slice of every session's partitions each time, so that no step costs O(partitions)),
and a partition leaves `changed` only when a fetch finds it quiet. Every mark but a high-watermark move's also wakes
the session's waiting fetch: a follower reads to the log end, so a new high watermark alone is nothing to answer yet.
A quiet partition is not recorded as fetched each time; `caught_up_ms` answers for it when the ISR check asks.

Epoch -1 closes a session; a missing session answers FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
INVALID_FETCH_SESSION_EPOCH, and the follower falls back to a full fetch in a new session.

Only replica fetches get sessions: consumers asking for one are answered with session id 0 (Kafka's answer
when it declines), so they stay sessionless. A follower has at most one session here (a new one replaces its
previous one: Strom runs one fetcher per leader, Kafka's `num.replica.fetchers` = 1), so stopped fetchers leave
no sessions behind. The cache holds `slots` sessions (Kafka's `max.incremental.fetch.session.cache.slots`); a
new session evicts the least recently used one, whose follower then gets FETCH_SESSION_ID_NOT_FOUND once.
Sessions do not survive a restart (memory only), which the follower sees the same way. Event loop only.
"""

import asyncio
import random
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from brokerd.protocol.fetch_request import MAX_EPOCH
from brokerd.types import BrokerId, TopicPartition
from brokerd.waits import wait_resolved


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: the follower's last position here, and what the session last answered.
    Field names match a Fetch request's partition, so the Fetch handler reads either alike."""

    partition: int
    fetch_offset: int
    current_leader_epoch: int
    partition_max_bytes: int
    last_fetched_epoch: int = -1
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1

    def update(self, requested) -> None:
        self.fetch_offset = requested.fetch_offset
        self.current_leader_epoch = getattr(requested, "current_leader_epoch", -1)
        self.partition_max_bytes = requested.partition_max_bytes
        self.last_fetched_epoch = getattr(requested, "last_fetched_epoch", -1)


@dataclass(slots=True)
class FetchSession:
    id: int
    replica_id: BrokerId
    epoch: int = 1
    """The epoch the next incremental fetch must carry."""
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)
    changed: set[TopicPartition] = field(default_factory=set)
    """Partitions an incremental fetch must look at: named by a request, or marked by `mark_changed` (an append,
    a high-watermark move, a role change, the periodic sweep). The Fetch handler drops one once it finds it
    quiet; every other partition of the session is quiet (see the module docstring)."""
    last_fetch_ms: int = -1
    """Monotonic ms of the session's last fetch: every partition counts as fetched then at its cached offset."""
    _waiter: asyncio.Future[None] | None = None
    _sweep: list[TopicPartition] = field(default_factory=list)
    """The partitions the current sweep has yet to mark (taken when it started, marked from the end)."""
    _sweep_slice: int = 0
    """How many of them each `sweep_slice` marks."""

    def update(self, requested: Iterable[tuple[str, Iterable]], forgotten: Iterable[TopicPartition]) -> None:
        """Add or update `requested` ((topic, request partitions) pairs), then drop `forgotten`."""
        for topic, partitions in requested:
            for p in partitions:
                key = TopicPartition(topic, p.partition)
                cached = self.partitions.get(key)
                if cached is None:
                    self.partitions[key] = CachedPartition(
                        p.partition, p.fetch_offset, getattr(p, "current_leader_epoch", -1), p.partition_max_bytes,
                        getattr(p, "last_fetched_epoch", -1))
                else:
                    cached.update(p)
                self.changed.add(key)
        for key in forgotten:
            self.partitions.pop(key, None)
            self.changed.discard(key)

    def watch(self) -> None:
        """From now on, a waking `mark_changed` of one of its partitions completes `wait_for_change`."""
        self._waiter = asyncio.get_running_loop().create_future()

    async def wait_for_change(self, timeout_s: float) -> bool:
        """Until a partition was marked changed since `watch` (True) or `timeout_s` (False)."""
        waiter = self._waiter
        if waiter is None:
            return False
        try:
            return await wait_resolved(waiter, timeout_s)
        finally:
            self._waiter = None

    def mark_changed(self, key: TopicPartition, wake: bool = True) -> None:
        """`key` is looked at by the next fetch; a waiting fetch wakes up unless `wake` is False."""
        if key in self.partitions:
            self.changed.add(key)
            if wake and self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(None)

    def sweep_slice(self, steps: int) -> None:
        """Mark the next slice of a sweep of `steps` slices: the first takes the session's partitions, each marks
        1/`steps` of them (those still in the session; one added since was marked when added), so every
        partition is marked within `steps` calls."""
        if not self._sweep:
            self._sweep = list(self.partitions)
            self._sweep_slice = -(-len(self._sweep) // steps)
        keys = self._sweep[-self._sweep_slice:] if self._sweep_slice else []
        del self._sweep[len(self._sweep) - len(keys):]
        partitions = self.partitions
        self.changed.update(key for key in keys if key in partitions)


class FetchSessionCache:
    """At most `slots` sessions by id, least recently used first; at most one per follower."""

    __slots__ = ("_sessions", "_by_replica", "slots", "evictions")

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._by_replica: dict[BrokerId, FetchSession] = {}
        self.evictions = 0
        """Sessions evicted to make room since the start."""

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, replica_id: BrokerId) -> FetchSession | None:
        """A new empty session for follower `replica_id` (None when `slots` is 0). It replaces that follower's
        previous session: a broker fetches from this one over a single fetcher, so a new session means the old
        one's answers are no longer read (its fetcher restarted, or its session broke). When full, the least
        recently used session is evicted."""
        if self.slots <= 0:
            return None
        previous = self._by_replica.get(replica_id)
        if previous is not None:
            self.remove(previous.id)
        while len(self._sessions) >= self.slots:
            _, evicted = self._sessions.popitem(last=False)
            del self._by_replica[evicted.replica_id]
            self.evictions += 1
        session_id = random.randint(1, MAX_EPOCH)
        while session_id in self._sessions:
            session_id = random.randint(1, MAX_EPOCH)
        session = self._sessions[session_id] = self._by_replica[replica_id] = FetchSession(session_id, replica_id)
        return session

    def get(self, session_id: int) -> FetchSession | None:
        """The session, now the most recently used; None if unknown (never created, evicted or closed)."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            del self._by_replica[session.replica_id]

    def mark_changed(self, key: TopicPartition, wake: bool = True) -> None:
        """Something a follower may need to hear about happened to `key` (an append, a high-watermark move, a
        role or epoch change): every session holding it looks at it again, and a waiting fetch wakes up unless
        `wake` is False (news that goes with the next answer but is no reason to answer: a high-watermark move)."""
        for session in self._by_replica.values():
            session.mark_changed(key, wake)

    def sweep_slice(self, steps: int) -> None:
        """One of the `steps` calls of the periodic sweep: every partition of every session is looked at again by
        a fetch within `steps` calls (a safety net for a change no event marked), a slice per call
        (`FetchSession.sweep_slice`): 1/`steps` of them, not all at once."""
        for session in self._by_replica.values():
            session.sweep_slice(steps)

    def caught_up_ms(self, replica_id: BrokerId, key: TopicPartition, leader_epoch: int, log_end_offset: int) -> int:
        """When follower `replica_id` was last caught up with `key` (this broker leads it at `leader_epoch`, its
        log ending at `log_end_offset`) as its session shows, -1 if it does not: a quiet partition is not
        recorded fetch by fetch, but its cached position counts at every fetch of the session. The leader's log
        end only grows within an epoch, so a cached offset at or past it now was at or past it then."""
        session = self._by_replica.get(replica_id)
        cached = None if session is None else session.partitions.get(key)
        if (cached is None or cached.fetch_offset < log_end_offset
                or cached.current_leader_epoch not in (-1, leader_epoch)):
            return -1
        return session.last_fetch_ms  # type: ignore[union-attr]
