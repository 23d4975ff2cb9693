"""Offset ranges: looking offsets up in the cluster (on the driver's planner process) and splitting ranges
into Spark input partitions (pure).

A range is `[start, end)` of one topic-partition. Invariants of a planned read: every range lies within
`[log start offset, high watermark]` at planning time (or the read fails, see `failOnDataLoss`), and the
pieces `split_ranges` returns cover each range exactly once, contiguously, without overlap.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from spark_jobs.source.options import EARLIEST, LATEST, Bound, OptionError, SourceOptions, TopicPartition


class OffsetLookupError(RuntimeError):
    """The cluster could not answer an offset or metadata lookup, or its answer contradicts the options."""


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Records `start <= offset < end` of one topic-partition: one Spark input partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def split_ranges(ranges: Mapping[TopicPartition, tuple[int, int]], min_partitions: int | None,
                 max_records: int) -> list[OffsetRange]:
    """Cut the non-empty ranges into pieces of at most `max_records` offsets; with `min_partitions`, cut
    further, in proportion to each range's size, until there are about that many (Spark's rule: a range
    gets `max(1, round(size / total * min_partitions))` pieces, never more than it has offsets). Pieces of a
    range are near-equal."""
    sized = sorted((tp, start, end) for tp, (start, end) in ranges.items() if end > start)
    total = sum(end - start for _, start, end in sized)
    pieces: list[OffsetRange] = []
    for (topic, partition), start, end in sized:
        size = end - start
        count = -(-size // max_records)
        if min_partitions and len(sized) < min_partitions:
            count = min(size, max(count, round(size / total * min_partitions)))
        for index in range(count):
            pieces.append(OffsetRange(topic, partition, start + size * index // count,
                                      start + size * (index + 1) // count))
    return pieces


def rate_limit(begins: dict[TopicPartition, int], ends: dict[TopicPartition, int],
               max_rows: int) -> dict[TopicPartition, int]:
    """Spark's `maxOffsetsPerTrigger` rule: each partition advances by its share of `max_rows`, in
    proportion to what it has available (floored, or rounded up when below one offset)."""
    sizes = {tp: ends[tp] - begins[tp] for tp in ends if ends[tp] > begins[tp]}
    total = sum(sizes.values())
    if total < 1:
        return dict(ends)
    limited = dict(ends)
    for tp, size in sizes.items():
        share = max_rows * size / total
        limited[tp] = min(ends[tp], begins[tp] + (int(share) if share >= 1 else 1))
    return limited


class OffsetLookup:
    """Metadata and offset lookups through one confluent-kafka AdminClient (ListOffsets is batched per
    broker). Lives only in the driver's planner process; never pickled."""

    def __init__(self, client: Mapping[str, str], timeout_s: float):
        from confluent_kafka import IsolationLevel
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient(dict(client))
        self._timeout_s = timeout_s
        committed = client.get("isolation.level", "read_uncommitted") == "read_committed"
        self._isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED

    def topics(self) -> dict:
        """The cluster's topics: name -> confluent-kafka TopicMetadata."""
        from confluent_kafka import KafkaException

        try:
            return self._admin.list_topics(timeout=self._timeout_s).topics
        except KafkaException as exc:
            raise OffsetLookupError(f"cannot read the cluster's metadata: {exc}") from None

    def partitions(self, options: SourceOptions) -> list[TopicPartition]:
        """The selected topics' partitions, sorted; an unknown subscribed or assigned topic is an error."""
        topics = self.topics()
        selection = options.topics
        named = selection.subscribe or tuple(selection.assign or ())
        missing = [topic for topic in named if topic not in topics]
        if missing:
            raise OffsetLookupError(f"unknown topic(s): {', '.join(sorted(missing))}")
        found = {(name, partition) for name, meta in topics.items() if selection.matches(name)
                 for partition in meta.partitions}
        if selection.assign is not None:
            wanted = {(topic, partition) for topic, parts in selection.assign.items() for partition in parts}
            unknown = wanted - found
            if unknown:
                raise OffsetLookupError(f"assign names unknown partitions: {_names(unknown)}")
            found = wanted
        return sorted(found)

    def watermarks(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """(log start offset, high watermark — the last stable offset under read_committed) per partition."""
        from confluent_kafka.admin import OffsetSpec

        partitions = list(partitions)
        low = self._list_offsets({tp: OffsetSpec.earliest() for tp in partitions})
        high = self._list_offsets({tp: OffsetSpec.latest() for tp in partitions})
        return {tp: (low[tp], high[tp]) for tp in partitions}

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset whose timestamp is >= the given ms, or None where no record is that late."""
        from confluent_kafka.admin import OffsetSpec

        found = self._list_offsets({tp: OffsetSpec.for_timestamp(ms) for tp, ms in timestamps.items()})
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def _list_offsets(self, specs: Mapping[TopicPartition, object]) -> dict[TopicPartition, int]:
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        if not specs:
            return {}
        request = {KafkaTopicPartition(topic, partition): spec for (topic, partition), spec in specs.items()}
        futures = self._admin.list_offsets(request, isolation_level=self._isolation,
                                           request_timeout=self._timeout_s)
        answer = {}
        for tp, future in futures.items():
            try:
                answer[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException as exc:
                raise OffsetLookupError(f"ListOffsets for {tp.topic}-{tp.partition} failed: {exc}") from None
        return answer


def plan_batch(options: SourceOptions, lookup: OffsetLookup) -> dict[TopicPartition, tuple[int, int]]:
    """`[start, end)` per selected partition for a batch read, checked against the log."""
    partitions = lookup.partitions(options)
    watermarks = lookup.watermarks(partitions)
    starts = resolve_bound(options.starting, watermarks, lookup, "startingOffsets",
                           no_record_latest=options.starting_timestamp_fallback_latest)
    ends = resolve_bound(options.ending, watermarks, lookup, "endingOffsets", no_record_latest=True)
    ranges = {}
    for tp in partitions:
        low, high = watermarks[tp]
        start = check_start(tp, starts[tp], low, options.fail_on_data_loss)
        end = ends[tp]
        if end > high:
            raise OffsetLookupError(f"endingOffsets {end} of {_name(tp)} is beyond its high watermark {high}")
        if start > end:
            raise OffsetLookupError(f"{_name(tp)}: starting offset {start} is after ending offset {end}")
        ranges[tp] = (start, end)
    return ranges


def check_start(tp: TopicPartition, start: int, low: int, fail_on_data_loss: bool) -> int:
    """A start below the log start offset lost records to retention: an error, or (failOnDataLoss=false)
    the log start offset."""
    if start >= low:
        return start
    if fail_on_data_loss:
        raise OffsetLookupError(f"{_name(tp)}: offsets {start}..{low - 1} are no longer in the log (deleted by "
                                "retention?); set failOnDataLoss=false to skip them")
    return low


def resolve_bound(bound: Bound, watermarks: Mapping[TopicPartition, tuple[int, int]], lookup: OffsetLookup,
                  name: str, no_record_latest: bool) -> dict[TopicPartition, int]:
    """Concrete offsets of `bound` for every partition in `watermarks`. A per-partition spec must name
    exactly those partitions. A timestamp no record reaches gives the high watermark when
    `no_record_latest`, else an error."""
    partitions = list(watermarks)
    named = bound.partitions()
    if named is not None and named != set(partitions):
        missing, unknown = _names(set(partitions) - named) or "none", _names(named - set(partitions)) or "none"
        raise OptionError(f"{name} must list every partition read and no other: missing {missing}, unknown {unknown}")
    if bound.timestamp is not None or bound.timestamps is not None:
        wanted = bound.timestamps or {tp: bound.timestamp for tp in partitions}
        found = lookup.offsets_for_times(wanted)
        resolved = {}
        for tp in partitions:
            if found[tp] is None and not no_record_latest:
                raise OffsetLookupError(f"{name}: {_name(tp)} has no record with a timestamp >= {wanted[tp]} "
                                        "(set startingOffsetsByTimestampStrategy=latest to start at its end)")
            resolved[tp] = watermarks[tp][1] if found[tp] is None else found[tp]
        return resolved
    specs = bound.offsets or {tp: bound.every for tp in partitions}
    return {tp: {EARLIEST: watermarks[tp][0], LATEST: watermarks[tp][1]}.get(specs[tp], specs[tp])
            for tp in partitions}


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(_name(tp) for tp in sorted(tps))
