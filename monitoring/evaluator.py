"""Burrow's lag rules as small pure functions (Burrow's `evaluator/caching.go`), plus Strom's two refinements.

Input per partition: the commit window (`Commit`s oldest → newest, each with offset, commit time and the
lag frozen when it was stored), the broker's recent log-end offsets (`heads`, oldest → newest), `now_ms`
and `allowed_lag` (records). Times are milliseconds (Burrow takes "now" in whole seconds; Strom does not
truncate). The rules, in Burrow's order (`partition_status`):

    gate   current lag <= allowed lag                                  → OK, whatever the window shows
    STOP   no commit for longer than the window spans (`offsets_stopped`), unless the consumer was caught
           up at one of the recent heads (`recent_lag_zero`)
    REWIND an offset went backwards and was not caught up again within the window
    rule 1 only if no commit in the window had a lag <= allowed lag (`lag_always_not_zero`):
    STALL    every commit in the window has the same offset
    WARN     the recorded lags never decrease
    else   OK

Strom's refinements apply only when `lag_seconds` (age of the oldest unconsumed record, read from the
log) is known:

    caught up  lag_seconds == 0: nothing unconsumed (e.g. only transaction markers after the commit)
               → OK, as the gate (Burrow needs `allowed-lag` = 1 for this, for every group).
    young data STOP also needs the oldest unconsumed record to be older than the window's span (and
               than `min_stop_grace_ms`): a consumer cannot be stopped for longer than its data has
               waited, so a caught-up consumer on an idle topic that just received a record is not STOP
               (Burrow only forgives it while its head ring still holds a caught-up sample).

Group status (`group_result`) is the worst partition status with STOP/STALL/REWIND counted as ERR.
"""

from collections.abc import Iterable, Sequence

from monitoring.model import Commit, GroupResult, PartitionInput, PartitionResult, Status

# Looked up once: evaluation runs for every partition of every group each round.
OK, WARN, ERR, STOP, STALL, REWIND = Status.OK, Status.WARN, Status.ERR, Status.STOP, Status.STALL, Status.REWIND


def current_lag(commits: Sequence[Commit], heads: Sequence[int]) -> int:
    """Latest head minus the newest committed offset, at least 0 (heads lag behind fast commits); 0 when
    there is no commit or no head yet. The only lag recomputed at evaluation time."""
    if not commits or not heads:
        return 0
    return max(0, heads[-1] - commits[-1].offset)


def offsets_stopped(commits: Sequence[Commit], now_ms: int) -> bool:
    """Time since the newest commit exceeds the window's span (strictly); one commit spans 0 ms."""
    first, last = commits[0], commits[-1]
    return now_ms - last.timestamp_ms > last.timestamp_ms - first.timestamp_ms


def recent_lag_zero(commits: Sequence[Commit], heads: Sequence[int]) -> bool:
    """Some recent head was at or below the newest committed offset: the consumer was caught up then."""
    last_offset = commits[-1].offset
    return any(head <= last_offset for head in heads)


def rewind_index(commits: Sequence[Commit]) -> int:
    """The index of the first commit whose offset is below its predecessor's, -1 when none is."""
    for i in range(1, len(commits)):
        if commits[i].offset < commits[i - 1].offset:
            return i
    return -1


def rewind_recovered(commits: Sequence[Commit], index: int) -> bool:
    """A commit at or after `index` reached the offset committed before the rewind again."""
    before = commits[index - 1].offset
    return any(c.offset >= before for c in commits[index:])


def lag_always_not_zero(commits: Sequence[Commit], allowed_lag: int) -> bool:
    """Rule 1: no commit in the window has a known lag <= `allowed_lag` (unknown lags are skipped)."""
    return not any(c.lag is not None and c.lag <= allowed_lag for c in commits)


def offsets_stalled(commits: Sequence[Commit]) -> bool:
    """Rule 4: every commit in the window has the same offset (true for a single commit)."""
    first = commits[0].offset
    return all(c.offset == first for c in commits)


def lag_not_decreasing(commits: Sequence[Commit]) -> bool:
    """Rule 5: the known lags, in order, never go down (equal counts as not decreasing)."""
    previous = None
    for commit in commits:
        lag = commit.lag
        if lag is not None:
            if previous is not None and lag < previous:
                return False
            previous = lag
    return True


def data_waited_longer(commits: Sequence[Commit], lag_seconds: float | None, min_stop_grace_ms: int) -> bool:
    """Strom: the oldest unconsumed record is older than the window's span and `min_stop_grace_ms`
    (always true when `lag_seconds` is unknown, leaving Burrow's STOP rule as it is)."""
    if lag_seconds is None:
        return True
    span_ms = commits[-1].timestamp_ms - commits[0].timestamp_ms
    return lag_seconds * 1000 > max(span_ms, min_stop_grace_ms)


def partition_status(commits: Sequence[Commit], heads: Sequence[int], lag: int, now_ms: int, allowed_lag: int,
                     lag_seconds: float | None = None, min_stop_grace_ms: int = 0) -> Status:
    """The status of a partition with at least one commit (Burrow's `calculatePartitionStatus`, in its
    order; `lag` is `current_lag`). With `lag_seconds` None the result is exactly Burrow's."""
    if lag <= allowed_lag or lag_seconds == 0:
        return OK
    if (offsets_stopped(commits, now_ms) and not recent_lag_zero(commits, heads)
            and data_waited_longer(commits, lag_seconds, min_stop_grace_ms)):
        return STOP
    rewind = rewind_index(commits)
    if rewind > 0 and not rewind_recovered(commits, rewind):
        return REWIND
    if lag_always_not_zero(commits, allowed_lag):
        if offsets_stalled(commits):
            return STALL
        if lag_not_decreasing(commits):
            return WARN
    return OK


def evaluate_partition(partition: PartitionInput, now_ms: int, allowed_lag: int = 0, minimum_complete: float = 0.0,
                       min_stop_grace_ms: int = 0) -> PartitionResult:
    """Burrow's `evaluatePartitionStatus`: completeness (filled fraction of the window), then the rules
    unless the window is less complete than `minimum_complete` (then OK). No commit: OK, complete 0."""
    commits = partition.commits
    lag = current_lag(commits, partition.heads)
    complete = min(1.0, len(commits) / partition.intervals)
    status = OK
    if commits and complete >= minimum_complete:
        status = partition_status(commits, partition.heads, lag, now_ms, allowed_lag, partition.lag_seconds,
                                  min_stop_grace_ms)
    return PartitionResult(
        topic=partition.topic, partition=partition.partition, owner=partition.owner, client_id=partition.client_id,
        status=status, start=commits[0] if commits else None, end=commits[-1] if commits else None,
        current_lag=lag, complete=complete, end_offset=partition.end_offset,
        lag_seconds=partition.lag_seconds if commits else None)


def group_result(cluster: str, group: str, partitions: Iterable[PartitionResult], now_ms: int) -> GroupResult:
    """Burrow's `evaluateConsumerStatus` over already evaluated partitions: worst status capped at ERR,
    `complete` = share of partitions with a full window (0.0 without partitions), first highest
    current lag as `maxlag`, `totallag` = Σ current lag; plus Strom's worst lag in seconds and whether
    any partition breached a threshold."""
    partitions = tuple(partitions)
    status = Status.OK
    maxlag: PartitionResult | None = None
    for p in partitions:
        if p.status > status:
            status = min(p.status, ERR)
        if maxlag is None or p.current_lag > maxlag.current_lag:
            maxlag = p
    complete = sum(1 for p in partitions if p.complete == 1.0) / len(partitions) if partitions else 0.0
    known_seconds = [p.lag_seconds for p in partitions if p.lag_seconds is not None]
    return GroupResult(
        cluster=cluster, group=group, status=status, complete=complete, partitions=partitions,
        partition_count=len(partitions), maxlag=maxlag, totallag=sum(p.current_lag for p in partitions),
        evaluated_ms=now_ms, lag_seconds=max(known_seconds) if known_seconds else None,
        threshold_breached=any(p.threshold_breached for p in partitions))


def not_found(cluster: str, group: str, now_ms: int) -> GroupResult:
    """Burrow's answer for an unknown or expired group: NOTFOUND, complete 1, no partitions."""
    return GroupResult(cluster=cluster, group=group, status=Status.NOTFOUND, complete=1.0, partitions=(),
                       partition_count=0, maxlag=None, totallag=0, evaluated_ms=now_ms)
