"""`FetchSessionHandler`: the follower's half of a fetch session with one leader (KIP-227, Kafka's
`FetchSessionHandler`), so that an idle follower's fetch names no partition instead of all of them.

Each round the fetcher hands `build` the positions it wants fetched (every ready partition) and the partitions
whose position may have changed since its last `build`. Outside a session (`epoch` 0) the request carries them
all and asks the leader to open a session; inside one it looks only at the changed ones, so a round's work
follows what changed: it carries those whose position differs from what the leader holds (new ones included)
and names in `forgotten` those no longer wanted (moved away, truncating, backing off). `handle_response` then either
commits what the leader now holds (and steps the epoch) or, on FETCH_SESSION_ID_NOT_FOUND or
INVALID_FETCH_SESSION_EPOCH (evicted, leader restarted, a lost answer), forgets the session so that the next
request is a full one. A transport failure (`reset`) does the same, asking the leader to close the old
session. A leader answering a full fetch with session id 0 declined: the next request is full again.

Invariant: `_held` is what the leader holds for the session with `session_id` at `epoch`; it changes only
with an answer the leader gave to that epoch. The caller's invariant: a partition whose wanted position changed
(or that came or went) since the last `build` is among `changed`.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from brokerd.protocol.fetch_request import INITIAL_EPOCH, FetchPosition, next_epoch
from brokerd.types import TopicPartition


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What one Fetch request sends: the session fields, the partitions to name and those to forget."""

    session: tuple[int, int]
    """(session_id, session_epoch)."""
    topics: dict[str, list[FetchPosition]]
    forgotten: dict[str, list[int]]


class FetchSessionHandler:
    __slots__ = ("session_id", "epoch", "_held", "_pending", "_pending_full")

    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._held: dict[TopicPartition, FetchPosition] = {}
        self._pending: dict[TopicPartition, FetchPosition | None] | None = None
        """What the last `build` sent: every position (a full request) or the changes (None: forgotten)."""
        self._pending_full = False

    def build(self, wanted: Mapping[TopicPartition, FetchPosition],
              changed: Iterable[TopicPartition]) -> SessionRequest:
        """The request for this round; `wanted` is every partition to fetch, with its position, and `changed` the
        partitions whose entry in `wanted` may differ from the last `build`'s (the only ones an incremental request
        looks at; `wanted` is not kept)."""
        topics: dict[str, list[FetchPosition]] = {}
        forgotten: dict[str, list[int]] = {}
        self._pending_full = self.epoch == INITIAL_EPOCH
        if self._pending_full:
            for key, position in wanted.items():
                topics.setdefault(key.topic, []).append(position)
            self._pending = dict(wanted)
        else:
            held = self._held
            updates: dict[TopicPartition, FetchPosition | None] = {}
            for key in changed:
                position = wanted.get(key)
                if held.get(key) == position:
                    continue
                updates[key] = position
                if position is None:
                    forgotten.setdefault(key.topic, []).append(key.partition)
                else:
                    topics.setdefault(key.topic, []).append(position)
            self._pending = updates
        return SessionRequest((self.session_id, self.epoch), topics, forgotten)

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Record the leader's answer to the last `build`; True if its partitions are to be applied (False after
        a top-level error — FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH or another: the next request is
        a full fetch)."""
        pending, self._pending = self._pending, None
        if error_code != ErrorCode.none:
            self.session_id, self.epoch, self._held = 0, INITIAL_EPOCH, {}
            return False
        if self.epoch == INITIAL_EPOCH:
            self.session_id = session_id
            self.epoch = INITIAL_EPOCH if session_id == 0 else next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        if not self.session_id or pending is None:
            self._held = {}
        elif self._pending_full:
            self._held = pending  # type: ignore[assignment]
        else:
            for key, position in pending.items():
                if position is None:
                    del self._held[key]
                else:
                    self._held[key] = position
        return True

    def reset(self) -> None:
        """The answer to the last request may be lost (transport failure): open a new session next, closing
        this one on the leader."""
        self.epoch, self._held, self._pending = INITIAL_EPOCH, {}, None
