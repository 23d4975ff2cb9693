"""Rollup arithmetic, pure (no Django): counter deltas across broker restarts, and spreading a delta over the
time buckets of a resolution.

Resolutions and how long their points are kept: 10 s for 24 h, 1 min for 7 days, 1 h for 90 days. A bucket
is named by its start (ms since the epoch, a multiple of the resolution) and covers [start, start + res).

Counters arrive cumulative (since the broker process started, `started`); a reader keeps the previous value.
The growth between two samples happened between `since` and `ts` (see the `__strom_metrics` format): it is
spread over the buckets the span [since, ts) overlaps, in proportion to the overlap, with integer parts that
add up to the delta exactly (no byte is lost or invented by rounding). A counter that went down, or a new
`started`, is a restart: the new value itself is the growth since `started`.
"""

from collections.abc import Mapping
from dataclasses import dataclass

RESOLUTIONS_S = (10, 60, 3600)
RETENTION_S = {10: 86_400, 60: 7 * 86_400, 3600: 90 * 86_400}


def bucket_start_ms(ts_ms: int, resolution_s: int) -> int:
    """The start of the bucket holding the instant `ts_ms`."""
    width = resolution_s * 1000
    return ts_ms - ts_ms % width


def sample_bucket_ms(ts_ms: int, resolution_s: int) -> int:
    """The bucket a sample taken at `ts_ms` describes: the one it ends (brokers sample on bucket edges, and the
    sample at 10:00:10 tells about [10:00:00, 10:00:10))."""
    return bucket_start_ms(ts_ms - 1, resolution_s)


@dataclass(frozen=True, slots=True)
class CounterReading:
    """Cumulative counters of one entity (a broker's totals or one topic on a broker) at `ts_ms`."""

    started_ms: int
    ts_ms: int
    values: Mapping[str, int]


def counter_deltas(previous: CounterReading | None, current: CounterReading, follows_start: bool
                   ) -> tuple[dict[str, int], int] | None:
    """(growth per counter, start of the interval it happened in) from `previous` to `current`, or None when
    nothing can be said (first reading of an entity whose earlier history was not seen).

    `follows_start`: the reader has seen this broker incarnation from its start (or the entity is new in it),
    so an entity without a previous reading counted from 0. A restart (another `started_ms`, or any counter
    lower than before) makes the current values the growth since `started_ms`.
    """
    if previous is None:
        if not follows_start:
            return None
        return dict(current.values), current.started_ms
    restarted = previous.started_ms != current.started_ms or any(
        value < previous.values.get(name, 0) for name, value in current.values.items())
    if restarted:
        return dict(current.values), current.started_ms
    return {name: value - previous.values.get(name, 0) for name, value in current.values.items()}, previous.ts_ms


def spread(deltas: Mapping[str, int], start_ms: int, end_ms: int, resolution_s: int) -> dict[int, dict[str, int]]:
    """Distribute `deltas`, which grew between the samples at `start_ms` and `end_ms`, over the buckets of
    `resolution_s` the time span [start_ms, end_ms) overlaps: {bucket start: {name: part}}; each name's parts
    sum to its delta. An empty or inverted span puts everything in the sample bucket of `end_ms`."""
    if not any(deltas.values()):
        return {}
    width = resolution_s * 1000
    if end_ms <= start_ms:
        return {sample_bucket_ms(end_ms, resolution_s): dict(deltas)}
    first = bucket_start_ms(start_ms, resolution_s)
    last = sample_bucket_ms(end_ms, resolution_s)
    total = end_ms - start_ms
    result: dict[int, dict[str, int]] = {}
    given = dict.fromkeys(deltas, 0)
    covered = 0
    for bucket in range(first, last + width, width):
        covered += min(end_ms, bucket + width) - max(start_ms, bucket)
        parts = {}
        for name, delta in deltas.items():
            upto = delta * covered // total  # cumulative share, so rounding never drifts
            parts[name] = upto - given[name]
            given[name] = upto
        result[bucket] = parts
    return result
