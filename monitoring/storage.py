"""Burrow's in-memory storage (`storage/inmemory.go`): per partition a window of the last `intervals`
commits of each group, and a ring of the last `intervals` broker log-end offsets ("heads").

Invariants:
- a window holds at most `intervals` commits, oldest → newest by `order` (the commit record's offset in
  `__consumer_offsets`), no two with the same order;
- a commit's `lag` is set only when it was appended as the newest commit (head at that moment minus its
  offset, at least 0) and frozen from then on; commits inserted out of order have lag None;
- a commit faster than `min_distance_ms` after the one before it overwrites that one and keeps its
  timestamp, so fast committers cannot shrink the window's time span;
- commits are stored only for partitions with a known head (as Burrow: the topic must be known), and
  once a group committed to a topic, every partition of the topic appears in the group (empty windows
  for partitions without commits);
- a group whose newest commit (or, without commits, whose last sighting) is older than `expire_group_ms`
  is retired by `expire`, and so is a topic of a group that got no commit for that long; a deleted
  topic disappears from every group at once (`retain_topics`).

Not thread-safe: the service serialises access.
"""

import collections
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from monitoring.model import Commit, PartitionInput


class NameFilter:
    """Burrow's allow/deny lists: a name passes when it matches `allow` (if set) and not `deny` (if set).
    Both are Python regular expressions searched anywhere in the name (Go's unanchored MatchString)."""

    def __init__(self, allow: str | None = None, deny: str | None = None) -> None:
        self._allow = re.compile(allow) if allow else None
        self._deny = re.compile(deny) if deny else None

    def __call__(self, name: str) -> bool:
        if self._allow is not None and not self._allow.search(name):
            return False
        return not (self._deny is not None and self._deny.search(name))


@dataclass(slots=True)
class PartitionWindow:
    commits: list[Commit] = field(default_factory=list)
    owner: str = ""
    client_id: str = ""


@dataclass(slots=True)
class GroupWindows:
    """One group: per topic a window per partition (index = partition id), the newest appended commit's
    timestamp (Burrow's `lastCommit`, 0 if none), per topic the same, and when the group was last seen."""

    topics: dict[str, list[PartitionWindow]] = field(default_factory=dict)
    last_commit_ms: int = 0
    topic_last_commit_ms: dict[str, int] = field(default_factory=dict)
    seen_ms: int = 0


class OffsetStorage:
    """Windows of commits per group and partition, and rings of heads per partition."""

    def __init__(self, intervals: int = 10, min_distance_ms: int = 0, expire_group_ms: int = 604_800_000,
                 groups: NameFilter | None = None, topics: NameFilter | None = None) -> None:
        if intervals < 1:
            raise ValueError("intervals must be at least 1")
        self.intervals = intervals
        self.min_distance_ms = min_distance_ms
        self.expire_group_ms = expire_group_ms
        self.accept_group = groups or NameFilter()
        self.accept_topic = topics or NameFilter()
        self._heads: dict[str, list[collections.deque[int]]] = {}
        self._groups: dict[str, GroupWindows] = {}

    #
    # Heads (from ListOffsets)
    #

    def add_heads(self, topic: str, heads: Sequence[int | None]) -> None:
        """One ListOffsets round for `topic`: `heads[p]` is partition p's log-end offset (None: no answer).
        The topic's partition list grows to `len(heads)`; each answered ring advances by one."""
        if not self.accept_topic(topic):
            return
        rings = self._heads.setdefault(topic, [])
        while len(rings) < len(heads):
            rings.append(collections.deque(maxlen=self.intervals))
        for ring, head in zip(rings, heads, strict=False):
            if head is not None:
                ring.append(head)

    def retain_topics(self, existing: Iterable[str]) -> list[str]:
        """Forget every topic not in `existing` (deleted from the cluster), in heads and in every group;
        returns the forgotten topics."""
        keep = set(existing)
        gone = [t for t in self._heads if t not in keep]
        for topic in gone:
            del self._heads[topic]
            for group in self._groups.values():
                group.topics.pop(topic, None)
                group.topic_last_commit_ms.pop(topic, None)
        return gone

    def topics(self) -> list[str]:
        return list(self._heads)

    def topic_heads(self, topic: str) -> list[int] | None:
        """The latest head of each partition that has one (Burrow's topic detail), None for an unknown topic."""
        rings = self._heads.get(topic)
        return None if rings is None else [ring[-1] for ring in rings if ring]

    def latest_head(self, topic: str, partition: int) -> int | None:
        rings = self._heads.get(topic)
        if rings is None or partition >= len(rings) or not rings[partition]:
            return None
        return rings[partition][-1]

    #
    # Commits and owners (from __consumer_offsets)
    #

    def add_commit(self, group: str, topic: str, partition: int, offset: int, order: int, timestamp_ms: int,
                   now_ms: int) -> bool:
        """Store one commit (Burrow's `addConsumerOffset`); False when it was dropped: older than
        `expire_group_ms`, group filtered out, no head known for the partition, already in the window,
        or older than a full window."""
        if timestamp_ms < now_ms - self.expire_group_ms or not self.accept_group(group):
            return False
        head = self.latest_head(topic, partition)
        if head is None or partition < 0:
            return False
        state = self._groups.get(group)
        if state is None:
            state = self._groups[group] = GroupWindows()
        window = self._window(state, topic, partition)
        commits = window.commits
        index, appended = self._destination(commits, order)
        if index is None:
            return False
        lag = None
        if appended:
            lag = max(0, head - offset)
            state.last_commit_ms = timestamp_ms
            state.topic_last_commit_ms[topic] = timestamp_ms
        state.seen_ms = max(state.seen_ms, now_ms)
        # Burrow's mergeFrequentCommitIntoPrevious: an append or an insert lands right after an older commit;
        # too soon after it, the new commit takes that commit's place and keeps its timestamp.
        if index > 0 and timestamp_ms - commits[index - 1].timestamp_ms < self.min_distance_ms:
            commits[index - 1] = Commit(offset, order, commits[index - 1].timestamp_ms, now_ms, lag)
            return True
        commit = Commit(offset, order, timestamp_ms, now_ms, lag)
        if index < 0:
            commits[0] = commit  # replaces the oldest of a full window
        else:
            commits.insert(index, commit)
            if len(commits) > self.intervals:
                del commits[0]
        return True

    def _destination(self, commits: list[Commit], order: int) -> tuple[int | None, bool]:
        """Where a commit with `order` goes (Burrow's `findConsumerOffsetDestination`), as (index, appended):
        index None = drop; -1 = replace the oldest of a full window; else insert before `commits[index]`
        (len(commits) = append; the oldest is evicted when the window overflows)."""
        if not commits or commits[-1].order < order:
            return len(commits), True
        full = len(commits) == self.intervals
        if full and commits[0].order >= order:
            return None, False  # a backfill older than everything in a full window
        i = len(commits) - 1
        while True:
            if i < 0:
                return 0, False  # before the oldest of a partial window: fills the empty slot there
            if full and i == 0:
                return -1, False  # Burrow reuses the oldest slot of a full window before comparing with it
            if commits[i].order == order:
                return None, False
            if commits[i].order < order:
                return i + 1, False
            i -= 1

    def delete_commits(self, group: str, topic: str, partition: int) -> None:
        """An offset tombstone: the group's committed offset for the partition was deleted (OffsetDelete,
        DeleteGroups or offset expiry). The topic leaves the group when none of its partitions has a commit."""
        state = self._groups.get(group)
        windows = state.topics.get(topic) if state else None
        if state is None or windows is None or partition >= len(windows):
            return
        windows[partition].commits.clear()
        if not any(w.commits for w in windows):
            del state.topics[topic]
            state.topic_last_commit_ms.pop(topic, None)

    def set_owners(self, group: str, owners: Mapping[tuple[str, int], tuple[str, str]], now_ms: int) -> None:
        """A new group generation: `owners[(topic, partition)] = (client host, client id)` replaces the group's
        owners (empty: the group has no members). A group seen only here is kept, without commits."""
        if not self.accept_group(group):
            return
        state = self._groups.get(group)
        if state is None:
            if not owners:
                return
            state = self._groups[group] = GroupWindows()
        state.seen_ms = max(state.seen_ms, now_ms)
        for windows in state.topics.values():
            for window in windows:
                window.owner = window.client_id = ""
        for (topic, partition), (host, client_id) in owners.items():
            if self.latest_head(topic, partition) is None:
                continue
            window = self._window(state, topic, partition)
            window.owner, window.client_id = host, client_id

    def delete_group(self, group: str) -> bool:
        """A group metadata tombstone (or Burrow's DELETE): forget the group."""
        return self._groups.pop(group, None) is not None

    def delete_group_topic(self, group: str, topic: str) -> None:
        """Burrow's DELETE of one topic of a group; the group goes when no topic is left."""
        state = self._groups.get(group)
        if state is not None and state.topics.pop(topic, None) is not None:
            state.topic_last_commit_ms.pop(topic, None)
            if not state.topics:
                del self._groups[group]

    def _window(self, state: GroupWindows, topic: str, partition: int) -> PartitionWindow:
        windows = state.topics.setdefault(topic, [])
        count = max(partition + 1, len(self._heads.get(topic, ())))
        while len(windows) < count:
            windows.append(PartitionWindow())
        return windows[partition]

    def expire(self, now_ms: int) -> tuple[list[str], list[tuple[str, str]]]:
        """Retire groups and group topics without a commit (or, for groups that never committed, a sighting)
        for `expire_group_ms`; returns (retired groups, retired (group, topic) pairs)."""
        cutoff = now_ms - self.expire_group_ms
        groups, topics = [], []
        for name, state in list(self._groups.items()):
            if (state.last_commit_ms or state.seen_ms) < cutoff:
                del self._groups[name]
                groups.append(name)
                continue
            for topic, last in list(state.topic_last_commit_ms.items()):
                if last < cutoff:
                    del state.topics[topic], state.topic_last_commit_ms[topic]
                    topics.append((name, topic))
        return groups, topics

    #
    # Reads
    #

    def groups(self) -> list[str]:
        return list(self._groups)

    def group(self, group: str) -> GroupWindows | None:
        """The group's windows as stored (read-only for callers)."""
        return self._groups.get(group)

    def consumers_of(self, topic: str) -> list[str]:
        return [name for name, state in self._groups.items() if topic in state.topics]

    def partition_inputs(self, group: str) -> list[PartitionInput] | None:
        """The evaluator's input for every partition of the group (topics in name order), lag seconds not
        yet known; None for an unknown group."""
        state = self._groups.get(group)
        if state is None:
            return None
        inputs = []
        for topic in sorted(state.topics):
            rings = self._heads.get(topic, ())
            for partition, window in enumerate(state.topics[topic]):
                heads = tuple(rings[partition]) if partition < len(rings) else ()
                inputs.append(PartitionInput(topic, partition, tuple(window.commits), heads, self.intervals,
                                             window.owner, window.client_id))
        return inputs

    #
    # Persistence
    #

    def to_snapshot(self) -> dict:
        """Everything stored, as JSON-compatible data (`from_snapshot` restores it)."""
        return {
            "intervals": self.intervals,
            "heads": {t: [list(r) for r in rings] for t, rings in self._heads.items()},
            "groups": {
                name: {"last_commit_ms": g.last_commit_ms, "seen_ms": g.seen_ms,
                       "topic_last_commit_ms": g.topic_last_commit_ms,
                       "topics": {t: [[w.owner, w.client_id, [list(_commit_fields(c)) for c in w.commits]]
                                      for w in windows] for t, windows in g.topics.items()}}
                for name, g in self._groups.items()},
        }

    def restore(self, snapshot: Mapping) -> None:
        """Replace the contents with a `to_snapshot()` result; windows and rings are cut to `intervals`."""
        n = self.intervals
        self._heads = {topic: [collections.deque(ring[-n:], maxlen=n) for ring in rings]
                       for topic, rings in snapshot["heads"].items()}
        self._groups = {}
        for name, g in snapshot["groups"].items():
            self._groups[name] = GroupWindows(
                topics={t: [PartitionWindow([Commit(*c) for c in commits[-n:]], owner, client_id)
                            for owner, client_id, commits in windows] for t, windows in g["topics"].items()},
                last_commit_ms=g["last_commit_ms"], topic_last_commit_ms=dict(g["topic_last_commit_ms"]),
                seen_ms=g["seen_ms"])


def _commit_fields(commit: Commit) -> tuple:
    return commit.offset, commit.order, commit.timestamp_ms, commit.observed_ms, commit.lag
