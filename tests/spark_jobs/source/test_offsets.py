"""Splitting offset ranges into input partitions and Spark's maxOffsetsPerTrigger rule, against oracles."""

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jobs.source.offsets import OffsetRange, rate_limit, split_ranges

ranges_strategy = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5)),
    st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)).map(sorted).map(tuple),
    max_size=8)


@settings(deadline=None)  # a shared 2-core machine: time is not what this test checks
@given(ranges_strategy, st.one_of(st.none(), st.integers(1, 40)), st.integers(1, 5_000))
def test_pieces_cover_every_range_exactly_once(ranges, min_partitions, max_records):
    pieces = split_ranges(ranges, min_partitions, max_records)
    covered: dict = {}
    for piece in pieces:
        assert 0 < piece.size <= max_records
        covered.setdefault((piece.topic, piece.partition), []).append((piece.start, piece.end))
    for tp, (start, end) in ranges.items():
        spans = sorted(covered.pop(tp, []))
        if end == start:
            assert spans == []
            continue
        assert spans[0][0] == start and spans[-1][1] == end
        assert all(prev[1] == nxt[0] for prev, nxt in zip(spans, spans[1:], strict=False))
    assert covered == {}


def test_large_ranges_are_split_evenly():
    pieces = split_ranges({("a", 0): (100, 350), ("a", 1): (0, 50)}, None, 100)
    assert pieces == [OffsetRange("a", 0, 100, 183), OffsetRange("a", 0, 183, 266), OffsetRange("a", 0, 266, 350),
                      OffsetRange("a", 1, 0, 50)]


def test_min_partitions_splits_in_proportion_to_size():
    # 900 + 100 offsets, 10 wanted: 9 and 1 pieces (round(size / total * 10))
    pieces = split_ranges({("a", 0): (0, 900), ("a", 1): (0, 100)}, 10, 1_000_000)
    assert [(p.partition, p.size) for p in pieces] == [(0, 100)] * 9 + [(1, 100)]
    # already enough ranges: left alone
    assert len(split_ranges({("a", p): (0, 10) for p in range(4)}, 3, 1_000_000)) == 4
    # never more pieces than offsets
    assert split_ranges({("a", 0): (7, 9)}, 5, 1_000_000) == [OffsetRange("a", 0, 7, 8), OffsetRange("a", 0, 8, 9)]


def test_max_offsets_per_trigger_is_shared_in_proportion():
    begins = {("a", 0): 0, ("a", 1): 10, ("a", 2): 5}
    ends = {("a", 0): 300, ("a", 1): 110, ("a", 2): 5}
    # 400 available, 100 allowed: 300/400*100 = 75 and 100/400*100 = 25; an idle partition stays put
    assert rate_limit(begins, ends, 100) == {("a", 0): 75, ("a", 1): 35, ("a", 2): 5}
    # a share below one offset still advances by one, as in Spark
    assert rate_limit({("a", 0): 0, ("a", 1): 0}, {("a", 0): 1000, ("a", 1): 1}, 10) == {("a", 0): 9, ("a", 1): 1}
    assert rate_limit(begins, ends, 10_000) == ends
