"""The types every stage of the lag pipeline shares (Burrow's `core/protocol`).

Units: offsets are Kafka offsets; times are milliseconds since the Unix epoch (`*_ms`) unless the name
ends in `_s`/`_seconds`; lags are records (`lag`, `current_lag`) or seconds (`lag_seconds`).
"""

import enum
from dataclasses import dataclass


class Status(enum.IntEnum):
    """Burrow's verdicts, with Burrow's integer codes (webhook thresholds and Prometheus gauges use them).

    A group is NOTFOUND, OK, WARN or ERR; a partition is OK, WARN, STOP, STALL or REWIND.
    """

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True, slots=True)
class Commit:
    """One committed offset kept in a partition's window (Burrow's `ConsumerOffset`).

    `order` is the offset of the commit record in its `__consumer_offsets` partition (all commits of one
    group land in one partition, so it orders them); `timestamp_ms` is the commit time the coordinator
    wrote, `observed_ms` when the monitor stored it; `lag` is the broker's log-end offset minus `offset`
    when the commit was stored (never below 0), None when the commit arrived out of order.
    """

    offset: int
    order: int
    timestamp_ms: int
    observed_ms: int
    lag: int | None


@dataclass(frozen=True, slots=True)
class PartitionInput:
    """Everything the rules look at for one partition of one group (the evaluator's documented input).

    `commits`: the window, oldest → newest, 0 to `intervals` entries (empty: the group has no committed
    offset here). `heads`: the broker's recent log-end offsets, oldest → newest (empty until the first
    ListOffsets round). `lag_seconds`: how long ago the oldest unconsumed record (the one at the committed
    offset) was appended, 0.0 when nothing is unconsumed, None when not known (pure Burrow rules apply).
    """

    topic: str
    partition: int
    commits: tuple[Commit, ...]
    heads: tuple[int, ...]
    intervals: int
    owner: str = ""
    client_id: str = ""
    lag_seconds: float | None = None

    @property
    def committed_offset(self) -> int | None:
        return self.commits[-1].offset if self.commits else None

    @property
    def end_offset(self) -> int | None:
        return self.heads[-1] if self.heads else None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """A partition's verdict (Burrow's `PartitionStatus`) plus Strom's lag facts.

    `current_lag` is Burrow's (latest log-end offset minus newest commit, at least 0; 0 without a commit);
    `lag` is the same number but None when the group has no committed offset here, so "no commit" is
    never reported as a lag. `complete` is the filled fraction of the window (0.0-1.0).
    """

    topic: str
    partition: int
    owner: str
    client_id: str
    status: Status
    start: Commit | None
    end: Commit | None
    current_lag: int
    complete: float
    end_offset: int | None
    lag_seconds: float | None
    threshold_breached: bool = False

    @property
    def committed_offset(self) -> int | None:
        return self.end.offset if self.end else None

    @property
    def lag(self) -> int | None:
        return None if self.end is None else self.current_lag


@dataclass(frozen=True, slots=True)
class GroupResult:
    """A group's verdict (Burrow's `ConsumerGroupStatus`) at `evaluated_ms`, with every partition.

    `status` is the worst partition status capped at ERR (NOTFOUND for an unknown group); `complete` is
    the fraction of partitions with a full window; `maxlag` the partition with the highest current lag
    (the first one on ties); `totallag` the sum of current lags. `lag_seconds` is the largest partition
    lag in seconds (None if none is known); `threshold_breached` whether any partition exceeds a Strom
    threshold.
    """

    cluster: str
    group: str
    status: Status
    complete: float
    partitions: tuple[PartitionResult, ...]
    partition_count: int
    maxlag: PartitionResult | None
    totallag: int
    evaluated_ms: int
    lag_seconds: float | None = None
    threshold_breached: bool = False

    @property
    def problem_partitions(self) -> tuple[PartitionResult, ...]:
        """The partitions Burrow's `/status` and notifiers show: those with a status worse than OK."""
        return tuple(p for p in self.partitions if p.status > Status.OK)
