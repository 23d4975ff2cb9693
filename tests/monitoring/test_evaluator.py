"""Burrow's lag rules (monitoring.evaluator), table-driven: the "correctness proof".

`BURROW_CASES` are the 16 windows of Burrow's own rule table (`caching_test.go`, `TestCachingEvaluator_
CheckRules`): each row gives the window, the heads, current lag, now and allowed lag, what every predicate
must say and the resulting status. Times are in ms (Burrow's table gives "now" in seconds: ×1000 here).
Changing a row changes Burrow's semantics: justify it in the commit. Edge rows from burrow-rules.md and
Strom's refinements follow.
"""

import pytest

from monitoring.evaluator import (
    current_lag,
    evaluate_partition,
    group_result,
    lag_always_not_zero,
    lag_not_decreasing,
    not_found,
    offsets_stalled,
    offsets_stopped,
    partition_status,
    recent_lag_zero,
    rewind_index,
)
from monitoring.model import Commit, PartitionInput, PartitionResult, Status


def window(*rows: tuple[int, int, int, int | None]) -> tuple[Commit, ...]:
    """Commits from (offset, order, timestamp_ms, lag) rows."""
    return tuple(Commit(offset, order, ts, ts, lag) for offset, order, ts, lag in rows)


def steady(offsets: list[int], lags: list[int | None]) -> tuple[Commit, ...]:
    """Commits 100 s apart starting at t=100 s, orders 1, 2, …"""
    return window(*((o, i + 1, (i + 1) * 100_000, lag) for i, (o, lag) in enumerate(zip(offsets, lags, strict=True))))


# Burrow rows 9 and 10: fifteen commits one second apart, every one caught up at the time.
PER_SECOND = window(*((792748079 + i, i + 1, ts, 0) for i, ts in enumerate(
    (1512224618356, 1512224619362, 1512224620366, 1512224621367, 1512224622370, 1512224623373, 1512224624378,
     1512224625379, 1512224626383, 1512224627383, 1512224628383, 1512224629388, 1512224630391, 1512224631394,
     1512224632397))))

INTERLEAVED_NULL_LAGS = window((1000, 10, 100_000, 0), (1500, 15, 150_000, None), (2000, 20, 200_000, 50),
                               (2500, 25, 250_000, None), (3000, 30, 300_000, 100), (3500, 35, 350_000, None),
                               (4000, 40, 400_000, 150), (4500, 45, 450_000, None), (5000, 50, 500_000, 200),
                               (5500, 55, 550_000, None))

# (commits, heads, current lag, now ms, allowed lag,
#  lag_always_not_zero, rewind_index, stopped, stalled, lag_not_decreasing, recent_lag_zero, status)
BURROW_CASES = [
    # 0: lag was zero somewhere in the window → OK
    (steady([1000, 2000, 3000, 4000, 5000], [0, 50, 100, 150, 200]), [5200], 200, 600_000, 0,
     False, -1, False, False, True, False, Status.OK),
    # 1: 400 s since the last commit equals the 400 s span: not stopped (strict >)
    (steady([1000, 2000, 3000, 4000, 5000], [0, 50, 100, 150, 200]), [5200], 200, 900_000, 0,
     False, -1, False, False, True, False, Status.OK),
    # 2: 500 s > 400 s: STOP, although the window once had zero lag (STOP is checked first)
    (steady([1000, 2000, 3000, 4000, 5000], [0, 50, 100, 150, 200]), [5200], 200, 1_000_000, 0,
     False, -1, True, False, True, False, Status.STOP),
    # 3: STOP with lag never zero as well
    (steady([1000, 2000, 3000, 4000, 5000], [50, 100, 150, 200, 250]), [5250], 250, 1_000_000, 0,
     True, -1, True, False, True, False, Status.STOP),
    # 4: offsets never move, but the first commit had zero lag → OK (rule 1 not met)
    (steady([1000] * 5, [0, 50, 100, 150, 200]), [1200], 200, 600_000, 0,
     False, -1, False, True, True, False, Status.OK),
    # 5: offsets never move and lag never zero → STALL
    (steady([1000] * 5, [100, 150, 200, 250, 300]), [1300], 300, 600_000, 0,
     True, -1, False, True, True, False, Status.STALL),
    # 6: STALL with a constant lag too
    (steady([1000] * 5, [100] * 5), [1100], 100, 600_000, 0,
     True, -1, False, True, True, False, Status.STALL),
    # 7: a rewind at index 3 that was caught up again (4000 >= 3000) → OK
    (steady([1000, 2000, 3000, 2000, 4000], [100, 150, 200, 1250, 300]), [4300], 300, 600_000, 0,
     True, 3, False, False, False, False, Status.OK),
    # 8: current lag 0 → OK although the window would be stopped
    (steady([1000, 2000, 3000, 4000, 5000], [50, 100, 150, 200, 250]), [5250], 0, 1_000_000, 0,
     True, -1, True, False, True, False, Status.OK),
    # 9: always caught up at commit time, but new data and no commit for longer than the span → STOP
    (PER_SECOND, [792749024, 792749000, 792748800, 792748600, 792748500], 931, 1512224650_000, 0,
     False, -1, True, False, True, False, Status.STOP),
    # 10: as 9 but a recent head equals the last commit (caught up lately) → not STOP, OK
    (PER_SECOND, [792748094, 792748093, 792748093, 792748093], 1, 1512224650_000, 0,
     False, -1, True, False, True, True, Status.OK),
    # 11: case 0 with unknown (out-of-order) lags interleaved: unchanged
    (INTERLEAVED_NULL_LAGS, [5700], 200, 600_000, 0,
     False, -1, False, False, True, False, Status.OK),
    # 12: stopped by time, but current lag 1 is within allowed lag 1 → OK
    (window((1000, 1, 100_000, 2), (2000, 2, 200_000, 1), (2000, 2, 300_000, 1)), [2001], 1, 550_000, 1,
     False, -1, True, False, False, False, Status.OK),
    # 13: case 5 with allowed lag 99: lag still never <= 99 → STALL
    (steady([1000] * 5, [100, 150, 200, 250, 300]), [1300], 300, 600_000, 99,
     True, -1, False, True, True, False, Status.STALL),
    # 14: case 7 with allowed lag 99 → OK
    (steady([1000, 2000, 3000, 2000, 4000], [100, 150, 200, 1250, 300]), [4300], 300, 600_000, 99,
     True, 3, False, False, False, False, Status.OK),
    # 15: rewind not caught up (2500 < 3000) → REWIND
    (steady([1000, 2000, 3000, 2000, 2500], [100, 150, 200, 1250, 300]), [4300], 300, 600_000, 0,
     True, 3, False, False, False, False, Status.REWIND),
]


@pytest.mark.parametrize(("commits", "heads", "lag", "now_ms", "allowed", "always_not_zero", "rewind", "stopped",
                          "stalled", "not_decreasing", "recent_zero", "status"),
                         BURROW_CASES, ids=[f"burrow-{i}" for i in range(len(BURROW_CASES))])
def test_burrow_rule_table(commits, heads, lag, now_ms, allowed, always_not_zero, rewind, stopped, stalled,
                           not_decreasing, recent_zero, status):
    assert lag_always_not_zero(commits, allowed) is always_not_zero
    assert rewind_index(commits) == rewind
    assert offsets_stopped(commits, now_ms) is stopped
    assert offsets_stalled(commits) is stalled
    assert lag_not_decreasing(commits) is not_decreasing
    assert recent_lag_zero(commits, heads) is recent_zero
    assert partition_status(commits, heads, lag, now_ms, allowed) is status


@pytest.mark.parametrize(("commits", "heads", "lag", "now_ms", "allowed", "status"), [
    # the gate is strict: lag equal to allowed lag is OK however bad the window looks
    (steady([1000] * 3, [7, 7, 7]), [1007], 7, 10_000_000, 7, Status.OK),
    (steady([1000] * 3, [8, 8, 8]), [1008], 8, 300_000, 7, Status.STALL),
    # one commit spans 0 ms: any time after it with lag is STOP
    (window((10, 1, 1_000, 5)), [15], 5, 1_001, 0, Status.STOP),
    (window((10, 1, 1_000, 5)), [15], 5, 1_000, 0, Status.STALL),  # same instant: not stopped; one commit stalls
    # a recent head at the committed offset (<=) forgives STOP; one above does not
    (window((10, 1, 1_000, 0)), [10, 12], 2, 9_000, 0, Status.OK),
    (window((10, 1, 1_000, 0)), [11, 12], 2, 9_000, 0, Status.STOP),
    # only the first rewind counts: the second one (not caught up) is ignored once the first recovered
    (steady([100, 50, 150, 120], [5, 60, 5, 40]), [200], 80, 400_000, 0, Status.OK),
    # every lag unknown: rule 1 holds; moving offsets, no known lag to decrease → WARN
    (steady([100, 200, 300], [None, None, None]), [400], 100, 300_000, 0, Status.WARN),
    # one known lag: not decreasing → WARN; a decrease anywhere → OK
    (steady([100, 200, 300], [None, 30, None]), [400], 100, 300_000, 0, Status.WARN),
    (steady([100, 200, 300], [50, 40, 60]), [400], 100, 300_000, 0, Status.OK),
    # equal lags count as not decreasing → WARN
    (steady([100, 200, 300], [50, 50, 50]), [400], 100, 300_000, 0, Status.WARN),
])
def test_rule_edges(commits, heads, lag, now_ms, allowed, status):
    assert partition_status(commits, heads, lag, now_ms, allowed) is status


@pytest.mark.parametrize(("commits", "heads", "expected"), [
    ((), [10], 0),                                   # no commit
    (window((5, 1, 0, 0)), [], 0),                   # no head yet
    (window((5, 1, 0, 0)), [3, 12], 7),              # the latest head counts
    (window((5, 1, 0, 0), (15, 2, 1, 0)), [12], 0),  # head older than the commit: 0, never negative
])
def test_current_lag(commits, heads, expected):
    assert current_lag(commits, heads) == expected


# Strom: lag seconds known. A stopped-looking window (10 s span, 50 s since the last commit, lag 5).
STOPPED = steady([100, 200], [0, 0])  # commits at 100 s and 200 s


@pytest.mark.parametrize(("lag_seconds", "min_grace_ms", "status"), [
    (None, 0, Status.STOP),         # unknown: Burrow's verdict
    (0.0, 0, Status.OK),            # nothing unconsumed (transaction markers only): caught up
    (99.0, 0, Status.OK),           # data younger than the 100 s span: the consumer had no time to commit yet
    (100.0, 0, Status.OK),          # equal: not older
    (100.5, 0, Status.STOP),        # older than the span: stopped
    (100.5, 120_000, Status.OK),    # the minimum grace is larger than the span
    (120.5, 120_000, Status.STOP),
])
def test_strom_refinements(lag_seconds, min_grace_ms, status):
    assert partition_status(STOPPED, [205], 5, 400_000, 0, lag_seconds, min_grace_ms) is status


def partition_input(commits, heads=(100,), intervals=4, lag_seconds=None):
    return PartitionInput("t", 0, tuple(commits), tuple(heads), intervals, "host", "client", lag_seconds)


@pytest.mark.parametrize(("commits", "minimum_complete", "complete", "status"), [
    ((), 0.0, 0.0, Status.OK),                                              # no commit: OK, complete 0
    (steady([10], [90]), 0.0, 0.25, Status.STOP),                           # one of four slots
    (steady([10], [90]), 0.5, 0.25, Status.OK),                             # below minimum-complete: not evaluated
    (steady([10, 20], [90, 80]), 0.5, 0.5, Status.STOP),                    # at the minimum: evaluated
    (steady([10, 20, 30, 40], [90, 80, 70, 60]), 1.0, 1.0, Status.STOP),
])
def test_completeness(commits, minimum_complete, complete, status):
    result = evaluate_partition(partition_input(commits), 10_000_000, minimum_complete=minimum_complete)
    assert (result.complete, result.status) == (complete, status)


def test_partition_result_fields():
    commits = steady([10, 20], [90, 80])
    result = evaluate_partition(partition_input(commits, heads=(95, 100), lag_seconds=3.5), 250_000)
    assert (result.topic, result.partition, result.owner, result.client_id) == ("t", 0, "host", "client")
    assert (result.start, result.end, result.current_lag, result.lag) == (commits[0], commits[1], 80, 80)
    assert (result.committed_offset, result.end_offset, result.lag_seconds) == (20, 100, 3.5)


def test_no_commit_is_no_lag():
    result = evaluate_partition(partition_input((), lag_seconds=None), 1_000)
    assert (result.current_lag, result.lag, result.committed_offset, result.lag_seconds) == (0, None, None, None)


def result(status, lag=0, complete=1.0, partition=0, seconds=None, breached=False):
    return PartitionResult("t", partition, "", "", status, None, None, lag, complete, None, seconds, breached)


@pytest.mark.parametrize(("statuses", "group_status"), [
    ([Status.OK, Status.OK], Status.OK),
    ([Status.OK, Status.WARN], Status.WARN),
    ([Status.WARN, Status.STOP, Status.OK], Status.ERR),
    ([Status.STALL], Status.ERR),
    ([Status.REWIND, Status.WARN], Status.ERR),
])
def test_group_status_is_the_worst_partition_capped_at_err(statuses, group_status):
    results = [result(s, partition=i) for i, s in enumerate(statuses)]
    assert group_result("c", "g", results, 0).status is group_status


def test_group_aggregates():
    parts = [result(Status.OK, lag=5, complete=1.0, partition=0, seconds=1.5),
             result(Status.WARN, lag=9, complete=0.5, partition=1, seconds=4.0),
             result(Status.OK, lag=9, complete=1.0, partition=2, breached=True)]
    group = group_result("c", "g", parts, 42)
    assert group.maxlag is parts[1]  # the first of the two highest
    assert (group.totallag, group.partition_count, group.complete) == (23, 3, 2 / 3)
    assert (group.lag_seconds, group.threshold_breached, group.evaluated_ms) == (4.0, True, 42)
    assert group.problem_partitions == (parts[1],)


def test_group_without_partitions_is_zero_complete():
    group = group_result("c", "g", [], 0)
    assert (group.status, group.complete, group.maxlag, group.totallag) == (Status.OK, 0.0, None, 0)


def test_not_found():
    group = not_found("c", "g", 7)
    assert (group.status, group.complete, group.partitions, group.partition_count, group.maxlag, group.totallag) == (
        Status.NOTFOUND, 1.0, (), 0, None, 0)
