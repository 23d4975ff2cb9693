"""The leader's fetch sessions (KIP-227, Kafka's `FetchSessionCache`): what each follower last asked for, so
that its fetches name only the partitions whose position changed and the answers only those with news.

A session is opened by a replica Fetch with session_epoch 0 (a full fetch; its partitions are the session's),
then each incremental fetch carries the session id and the next epoch: its partitions are added or updated
(fetch offset, epoch, max bytes), its forgotten ones dropped, and every partition of the session counts as
fetched at its cached offset. The answer names a partition only when it has records, an error or a diverging
epoch, or when its high watermark or log start offset differ from what this session last sent (`sent_*`).
Epoch -1 closes a session; a missing session answers FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
INVALID_FETCH_SESSION_EPOCH, and the follower falls back to a full fetch in a new session.

Only replica fetches get sessions: consumers asking for one are answered with session id 0 (Kafka's answer
when it declines), so they stay sessionless. A follower has at most one session here (a new one replaces its
previous one: Strom runs one fetcher per leader, Kafka's `num.replica.fetchers` = 1), so stopped fetchers leave
no sessions behind. The cache holds `slots` sessions (Kafka's `max.incremental.fetch.session.cache.slots`); a
new session evicts the least recently used one, whose follower then gets FETCH_SESSION_ID_NOT_FOUND once.
Sessions do not survive a restart (memory only), which the follower sees the same way. Event loop only.
"""

import random
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from brokerd.protocol.fetch_request import MAX_EPOCH
from brokerd.types import BrokerId, TopicPartition


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
        for key in forgotten:
            self.partitions.pop(key, None)


class FetchSessionCache:
    """At most `slots` sessions by id, least recently used first."""

    __slots__ = ("_sessions", "slots", "evictions")

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
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
        for stale in [s.id for s in self._sessions.values() if s.replica_id == replica_id]:
            del self._sessions[stale]
        while len(self._sessions) >= self.slots:
            self._sessions.popitem(last=False)
            self.evictions += 1
        session_id = random.randint(1, MAX_EPOCH)
        while session_id in self._sessions:
            session_id = random.randint(1, MAX_EPOCH)
        session = self._sessions[session_id] = FetchSession(session_id, replica_id)
        return session

    def get(self, session_id: int) -> FetchSession | None:
        """The session, now the most recently used; None if unknown (never created, evicted or closed)."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)
