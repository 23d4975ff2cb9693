"""Burrow's storage (monitoring.storage): the window insert/append/merge table of Burrow's
`TestInMemoryStorage_addConsumerOffset_testCases` (min-distance 1 s, 10 slots, times relative to a base),
then heads, owners, filters, tombstones, expiry and snapshots."""

import pytest

from monitoring.model import Commit
from monitoring.storage import NameFilter, OffsetStorage

NOW = 1_800_000_000_000
BASE = NOW - 100_000  # commit times are BASE + the table's value, recent enough to be kept


def stored(storage: OffsetStorage, group="g", topic="t", partition=0) -> list[tuple]:
    window = storage.group(group).topics[topic][partition]
    return [(c.offset, c.order, c.timestamp_ms - BASE, c.lag) for c in window.commits]


# (min-distance ms, head, commits as (offset, order, relative ts), expected window as (offset, order, relative ts, lag))
WINDOW_CASES = [
    # 0: appends get the lag against the head
    (1000, 5000, [(1000, 1, 100_000), (2000, 2, 200_000), (3000, 3, 300_000), (4000, 4, 400_000), (5000, 5, 500_000)],
     [(1000, 1, 100_000, 4000), (2000, 2, 200_000, 3000), (3000, 3, 300_000, 2000), (4000, 4, 400_000, 1000),
      (5000, 5, 500_000, 0)]),
    # 1: older orders are prepended (no lag) until the window is full, then dropped
    (1000, 5000, [(1000, 20, 100_000), (2000, 30, 200_000), (3000, 15, 300_000)]
     + [(o, order, 300_000) for o, order in ((900, 14), (800, 13), (700, 12), (600, 11), (500, 10), (400, 9),
                                              (300, 8), (200, 7), (100, 6))],
     [(300, 8, 300_000, None), (400, 9, 300_000, None), (500, 10, 300_000, None), (600, 11, 300_000, None),
      (700, 12, 300_000, None), (800, 13, 300_000, None), (900, 14, 300_000, None), (3000, 15, 300_000, None),
      (1000, 20, 100_000, 4000), (2000, 30, 200_000, 3000)]),
    # 2: an order between two commits is inserted between them, without lag
    (1000, 5000, [(1000, 20, 100_000), (2000, 30, 300_000), (3000, 40, 400_000), (1500, 25, 200_000)],
     [(1000, 20, 100_000, 4000), (1500, 25, 200_000, None), (2000, 30, 300_000, 3000), (3000, 40, 400_000, 2000)]),
    # 3: inserting into a full window evicts the oldest
    (1000, 10000, [(i * 1000, i * 10, i * 100_000) for i in range(1, 11)] + [(5500, 55, 550_000)],
     [(i * 1000, i * 10, i * 100_000, 10000 - i * 1000) for i in range(2, 6)] + [(5500, 55, 550_000, None)]
     + [(i * 1000, i * 10, i * 100_000, 10000 - i * 1000) for i in range(6, 11)]),
    # 4: an order between the oldest two of a full window replaces the oldest
    (1000, 10000, [(i * 1000, i * 10, i * 100_000) for i in range(1, 11)] + [(1500, 15, 150_000)],
     [(1500, 15, 150_000, None)] + [(i * 1000, i * 10, i * 100_000, 10000 - i * 1000) for i in range(2, 11)]),
    # 5: a commit 1 ms after the newest overwrites it and keeps its timestamp (min-distance)
    (1000, 10000, [(i * 1000, i * 10, i * 100_000) for i in range(1, 6)] + [(6000, 60, 500_001)],
     [(i * 1000, i * 10, i * 100_000, 10000 - i * 1000) for i in range(1, 5)] + [(6000, 60, 500_000, 4000)]),
    # 6: an insert 1 ms after its predecessor overwrites that one (no lag: not an append)
    (1000, 10000, [(i * 1000, i * 10, i * 100_000) for i in range(1, 6)] + [(4500, 45, 400_001)],
     [(i * 1000, i * 10, i * 100_000, 10000 - i * 1000) for i in range(1, 4)] + [(4500, 45, 400_000, None),
                                                                                (5000, 50, 500_000, 5000)]),
    # (Strom) an order already in the window is dropped
    (1000, 5000, [(1000, 1, 100_000), (2000, 2, 200_000), (1500, 1, 150_000)],
     [(1000, 1, 100_000, 4000), (2000, 2, 200_000, 3000)]),
    # (Strom) min-distance 0 never merges commits going forward in time
    (0, 5000, [(1000, 1, 100_000), (2000, 2, 100_000)], [(1000, 1, 100_000, 4000), (2000, 2, 100_000, 3000)]),
]


@pytest.mark.parametrize(("min_distance", "head", "commits", "expected"), WINDOW_CASES,
                         ids=[f"case-{i}" for i in range(len(WINDOW_CASES))])
def test_window_insert_append_merge(min_distance, head, commits, expected):
    storage = OffsetStorage(intervals=10, min_distance_ms=min_distance)
    storage.add_heads("t", [head])
    for offset, order, ts in commits:
        storage.add_commit("g", "t", 0, offset, order, BASE + ts, NOW)
    assert stored(storage) == expected


def test_commit_drops():
    storage = OffsetStorage(intervals=3, expire_group_ms=60_000, groups=NameFilter(deny="^ignored"))
    assert not storage.add_commit("g", "t", 0, 1, 1, NOW, NOW)                 # no head for the topic yet
    storage.add_heads("t", [10])
    assert not storage.add_commit("g", "t", 1, 1, 1, NOW, NOW)                 # partition without a head
    assert not storage.add_commit("g", "t", 0, 1, 1, NOW - 60_001, NOW)        # older than expire-group
    assert not storage.add_commit("ignored-g", "t", 0, 1, 1, NOW, NOW)         # denied group
    assert storage.add_commit("g", "t", 0, 1, 1, NOW - 60_000, NOW)
    assert storage.groups() == ["g"]


def test_heads_ring_and_partition_growth():
    storage = OffsetStorage(intervals=3)
    for round_heads in ([1], [2, 20], [3, None], [4, 40]):
        storage.add_heads("t", round_heads)
    assert storage.topic_heads("t") == [4, 40]
    assert storage.latest_head("t", 1) == 40 and storage.latest_head("t", 2) is None
    storage.add_commit("g", "t", 0, 1, 1, NOW, NOW)
    inputs = storage.partition_inputs("g")
    assert [(i.partition, i.heads, len(i.commits)) for i in inputs] == [(0, (2, 3, 4), 1), (1, (20, 40), 0)]
    assert storage.topic_heads("nope") is None


def test_topic_filter_keeps_topics_out():
    storage = OffsetStorage(topics=NameFilter(allow="^orders"))
    storage.add_heads("orders", [5])
    storage.add_heads("audit", [5])
    assert storage.topics() == ["orders"]
    assert not storage.add_commit("g", "audit", 0, 1, 1, NOW, NOW)


@pytest.mark.parametrize(("allow", "deny", "passing", "failing"), [
    (".*", None, ["testgroup", "ok_group", "num02group"], []),
    ("test.*", None, ["testgroup", "a-testgroup"], ["ok_group"]),   # unanchored, as Go's MatchString
    (None, "[0-9]+", ["testgroup"], ["num02group"]),
    ("group", "^ok", ["testgroup"], ["ok_group", "other"]),
])
def test_name_filter(allow, deny, passing, failing):
    accept = NameFilter(allow, deny)
    assert all(accept(n) for n in passing) and not any(accept(n) for n in failing)


def test_owners_replace_previous_generation_and_keep_groups_without_commits():
    storage = OffsetStorage(intervals=2)
    storage.add_heads("t", [5, 5])
    storage.set_owners("g", {("t", 0): ("/10.0.0.1", "c1"), ("t", 1): ("/10.0.0.2", "c2")}, NOW)
    inputs = storage.partition_inputs("g")
    assert [(i.owner, i.client_id, i.commits) for i in inputs] == [("/10.0.0.1", "c1", ()), ("/10.0.0.2", "c2", ())]
    storage.set_owners("g", {("t", 1): ("/10.0.0.3", "c3")}, NOW)
    assert [(i.owner, i.client_id) for i in storage.partition_inputs("g")] == [("", ""), ("/10.0.0.3", "c3")]
    storage.set_owners("unknown", {}, NOW)
    assert storage.groups() == ["g"]


def test_tombstones_and_deletes():
    storage = OffsetStorage()
    storage.add_heads("t", [5, 5])
    storage.add_heads("u", [5])
    for partition in (0, 1):
        storage.add_commit("g", "t", partition, 1, 1 + partition, NOW, NOW)
    storage.add_commit("g", "u", 0, 1, 3, NOW, NOW)
    storage.delete_commits("g", "t", 0)
    assert "t" in storage.group("g").topics  # partition 1 still has a commit
    storage.delete_commits("g", "t", 1)
    assert list(storage.group("g").topics) == ["u"]
    assert storage.consumers_of("u") == ["g"] and storage.consumers_of("t") == []
    storage.delete_group_topic("g", "u")
    assert storage.groups() == []
    storage.add_commit("h", "u", 0, 1, 4, NOW, NOW)
    assert storage.delete_group("h") and not storage.delete_group("h")


def test_deleted_topics_leave_heads_and_groups():
    storage = OffsetStorage()
    storage.add_heads("t", [5])
    storage.add_heads("u", [5])
    storage.add_commit("g", "t", 0, 1, 1, NOW, NOW)
    storage.add_commit("g", "u", 0, 1, 2, NOW, NOW)
    assert storage.retain_topics(["u"]) == ["t"]
    assert storage.topics() == ["u"] and list(storage.group("g").topics) == ["u"]


def test_expiry_retires_groups_and_topics_without_commits():
    storage = OffsetStorage(expire_group_ms=1000)
    storage.add_heads("t", [5])
    storage.add_heads("u", [5])
    storage.add_commit("old", "t", 0, 1, 1, NOW, NOW)
    storage.add_commit("mixed", "t", 0, 1, 2, NOW, NOW)
    storage.add_commit("mixed", "u", 0, 1, 3, NOW + 900, NOW + 900)
    storage.set_owners("members-only", {("t", 0): ("/h", "c")}, NOW + 900)
    assert storage.expire(NOW + 1000) == ([], [])
    assert storage.expire(NOW + 1001) == (["old"], [("mixed", "t")])
    assert sorted(storage.groups()) == ["members-only", "mixed"] and list(storage.group("mixed").topics) == ["u"]
    assert storage.expire(NOW + 1901) == (["mixed", "members-only"], [])


def test_snapshot_round_trip():
    storage = OffsetStorage(intervals=3, min_distance_ms=0)
    storage.add_heads("t", [50, 60])
    storage.add_commit("g", "t", 1, 10, 1, NOW, NOW)
    storage.add_commit("g", "t", 1, 5, 0, NOW - 5, NOW)
    storage.set_owners("g", {("t", 1): ("/h", "c")}, NOW)
    copy = OffsetStorage(intervals=3)
    copy.restore(storage.to_snapshot())
    assert copy.to_snapshot() == storage.to_snapshot()
    assert copy.partition_inputs("g") == storage.partition_inputs("g")
    assert copy.partition_inputs("g")[1].commits == (Commit(5, 0, NOW - 5, NOW, None), Commit(10, 1, NOW, NOW, 50))
