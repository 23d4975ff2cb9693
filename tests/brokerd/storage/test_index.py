"""Offset and time indexes against a bisect oracle, and their file round trip / sanity checks."""

from bisect import bisect_right

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.storage.errors import CorruptIndexError
from brokerd.storage.offset_index import OffsetIndex
from brokerd.storage.time_index import TimeIndex

BASE = 1000

entries_strategy = st.lists(st.tuples(st.integers(1, 50), st.integers(1, 5000)), max_size=200).map(
    lambda steps: [(BASE + sum(s[0] for s in steps[: i + 1]), sum(s[1] for s in steps[: i + 1]))
                   for i in range(len(steps))])


@settings(max_examples=50, deadline=None)
@given(entries=entries_strategy, targets=st.lists(st.integers(BASE - 10, BASE + 12_000), max_size=50))
def test_offset_lookup_is_floor(tmp_path_factory, entries, targets):
    path = tmp_path_factory.mktemp("idx") / "x.index"
    index = OffsetIndex(path, BASE)
    for offset, position in entries:
        index.append(offset, position)
    index.flush(fsync=False)
    reloaded = OffsetIndex.load(path, BASE, log_size=10**9)
    keys = [o for o, _ in entries]
    for target in targets:
        i = bisect_right(keys, target) - 1
        expected = entries[i] if i >= 0 else (BASE, 0)
        assert index.lookup(target) == expected == reloaded.lookup(target)


@settings(max_examples=50, deadline=None)
@given(entries=entries_strategy, cut=st.integers(BASE, BASE + 12_000))
def test_truncate_then_append_persists(tmp_path_factory, entries, cut):
    path = tmp_path_factory.mktemp("idx") / "x.index"
    index = OffsetIndex(path, BASE)
    for offset, position in entries:
        index.append(offset, position)
    index.flush(fsync=False)
    index.truncate_to(cut)
    index.append(cut + 100_000, 10**8)
    index.flush(fsync=False)
    expected = [e for e in entries if e[0] < cut] + [(cut + 100_000, 10**8)]
    reloaded = OffsetIndex.load(path, BASE, log_size=10**9)
    assert [reloaded.entry(i) for i in range(len(reloaded))] == expected


def test_time_index_only_grows_and_looks_up_floor(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", BASE)
    for timestamp, offset in [(10, 1000), (10, 1005), (5, 1006), (20, 1010), (30, 1020)]:
        index.maybe_append(timestamp, offset)
    assert [index.entry(i) for i in range(len(index))] == [(10, 1000), (20, 1010), (30, 1020)]
    assert [index.lookup(t) for t in (1, 10, 19, 20, 99)] == [BASE, 1000, 1000, 1010, 1020]
    index.truncate_to(1010)
    assert len(index) == 1


@pytest.mark.parametrize("damage", ["torn", "unordered", "beyond_log"])
def test_damaged_offset_index_fails_sanity_check(tmp_path, damage):
    path = tmp_path / "x.index"
    index = OffsetIndex(path, BASE)
    for i in range(1, 5):
        index.append(BASE + i * 10, i * 100)
    index.flush(fsync=False)
    data = bytearray(path.read_bytes())
    if damage == "torn":
        data = data[:-3]
    elif damage == "unordered":
        data[8:16], data[16:24] = data[16:24], data[8:16]
    path.write_bytes(bytes(data))
    log_size = 200 if damage == "beyond_log" else 10_000
    with pytest.raises(CorruptIndexError):
        OffsetIndex.load(path, BASE, log_size)
