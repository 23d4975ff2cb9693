"""Offset-reset specs and scopes as `kafka-consumer-groups --reset-offsets` defines them, and Kafka's rule for
the new offset of one partition. Pure: no I/O, no clock (by-duration is resolved against a given `now_ms`).

Offsets are Kafka offsets, timestamps and durations milliseconds. Bad input raises `KafkaApiError`
INVALID_REQUEST (400) with a one-line message.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from controlplane.core.errors import KafkaApiError

__all__ = ("PartitionOffsets", "ResetKind", "ResetSpec", "Scope", "new_offset", "parse_datetime_ms",
           "parse_duration_ms", "parse_spec", "parse_topic_arguments")


class ResetKind(StrEnum):
    TO_EARLIEST = "to-earliest"
    TO_LATEST = "to-latest"
    TO_DATETIME = "to-datetime"
    BY_DURATION = "by-duration"
    SHIFT_BY = "shift-by"
    TO_OFFSET = "to-offset"


# Kafka's --to-datetime: 'YYYY-MM-DDTHH:mm:SS.sss', optional zone ('Z', '+01:00', '-0500', '+01'); no zone is UTC.
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}(:?\d{2})?)?")
# java.time.Duration.parse, which Kafka's --by-duration uses: [-+]PnDTnHnMn.nS, each part optionally signed.
_DURATION = re.compile(r"(?P<sign>[-+]?)P(?:(?P<days>[-+]?\d+)D)?"
                       r"(?:T(?:(?P<hours>[-+]?\d+)H)?(?:(?P<minutes>[-+]?\d+)M)?"
                       r"(?:(?P<seconds>[-+]?\d+)(?:[.,](?P<fraction>\d{0,9}))?S)?)?", re.IGNORECASE)


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError("INVALID_REQUEST", message, 400)


def parse_datetime_ms(text: str) -> int:
    """Kafka's --to-datetime value as milliseconds since the epoch."""
    text = text.strip()
    if not _DATETIME.fullmatch(text):
        raise _invalid(f"Invalid datetime '{text}': expected YYYY-MM-DDTHH:mm:SS[.sss][zone], "
                       "e.g. 2024-05-01T12:00:00.000 (UTC) or 2024-05-01T14:00:00+02:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as e:
        raise _invalid(f"Invalid datetime '{text}': {e}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    """Kafka's --by-duration value (ISO-8601 PnDTnHnMnS, as java.time.Duration parses it) in milliseconds."""
    text = text.strip()
    match = _DURATION.fullmatch(text)
    if not match or not any(match[part] for part in ("days", "hours", "minutes", "seconds")) or \
            (match["seconds"] is None and text.upper().endswith("T")):
        raise _invalid(f"Invalid duration '{text}': expected ISO-8601 PnDTnHnMnS, e.g. PT30M or P1DT2H")
    fraction_ms = int((match["fraction"] or "").ljust(3, "0")[:3])
    ms = (int(match["days"] or 0) * 86_400_000 + int(match["hours"] or 0) * 3_600_000
          + int(match["minutes"] or 0) * 60_000 + int(match["seconds"] or 0) * 1000
          + (-fraction_ms if (match["seconds"] or "").startswith("-") else fraction_ms))
    return -ms if match["sign"] == "-" else ms


@dataclass(frozen=True)
class ResetSpec:
    """What to reset to. `value`: to-offset the offset, shift-by the delta, to-datetime the timestamp (ms),
    by-duration the duration (ms) before now; None for to-earliest / to-latest."""

    kind: ResetKind
    value: int | None = None

    def timestamp_ms(self, now_ms: int) -> int | None:
        """The timestamp whose offsets the spec asks for, if it is a time-based spec."""
        if self.kind == ResetKind.TO_DATETIME:
            return self.value
        if self.kind == ResetKind.BY_DURATION:
            return now_ms - self.value
        return None


def _integer(kind: ResetKind, value: object) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(str(value).strip())
    except ValueError:
        raise _invalid(f"--{kind} needs an integer, got '{value}'") from None


def parse_spec(kind: str, value: object = None) -> ResetSpec:
    """A spec from its Kafka option name (`to-earliest`, …, with or without `--`) and its value."""
    try:
        kind = ResetKind(kind.removeprefix("--"))
    except ValueError:
        raise _invalid(f"Unknown reset spec '{kind}': expected one of {', '.join(k.value for k in ResetKind)}") \
            from None
    if kind in (ResetKind.TO_EARLIEST, ResetKind.TO_LATEST):
        if value not in (None, ""):
            raise _invalid(f"--{kind} takes no value")
        return ResetSpec(kind)
    if value in (None, ""):
        raise _invalid(f"--{kind} needs a value")
    if kind == ResetKind.TO_DATETIME:
        return ResetSpec(kind, parse_datetime_ms(str(value)))
    if kind == ResetKind.BY_DURATION:
        return ResetSpec(kind, parse_duration_ms(str(value)))
    number = _integer(kind, value)
    if kind == ResetKind.TO_OFFSET and number < 0:
        raise _invalid(f"--to-offset must be 0 or more, got {number}")
    return ResetSpec(kind, number)


@dataclass(frozen=True)
class Scope:
    """Which partitions to reset: every partition the group has committed offsets for (`all_topics`), or the
    named topics, each with its listed partitions or (None) all of them."""

    all_topics: bool = False
    topics: tuple[tuple[str, tuple[int, ...] | None], ...] = ()

    def __post_init__(self):
        if self.all_topics == bool(self.topics):
            raise _invalid("Give either all topics or a list of topics/partitions to reset")


def parse_topic_arguments(arguments: list[str]) -> Scope:
    """Kafka's `--topic` values: `t` (all partitions) or `t:0,1` (those partitions); repeats merge."""
    topics: dict[str, set[int] | None] = {}
    for argument in arguments:
        name, colon, partitions = argument.strip().partition(":")
        if not name:
            raise _invalid(f"Invalid --topic '{argument}': expected TOPIC or TOPIC:PARTITION[,PARTITION…]")
        if not colon:
            topics[name] = None
            continue
        try:
            numbers = {int(p) for p in partitions.split(",")}
        except ValueError:
            raise _invalid(f"Invalid --topic '{argument}': partitions must be integers, e.g. {name}:0,1") from None
        if any(n < 0 for n in numbers):
            raise _invalid(f"Invalid --topic '{argument}': partitions are 0 or more")
        if name not in topics or topics[name] is not None:
            topics[name] = (topics.get(name) or set()) | numbers
    return Scope(topics=tuple((name, None if parts is None else tuple(sorted(parts)))
                              for name, parts in topics.items()))


@dataclass(frozen=True)
class PartitionOffsets:
    """What the cluster says about one partition: the group's committed offset (None if none), the log start
    and end offsets, and for time-based specs the first offset at or after the timestamp (-1 if none)."""

    current: int | None
    log_start: int
    log_end: int
    by_timestamp: int | None = None


def new_offset(spec: ResetSpec, offsets: PartitionOffsets, partition_name: str) -> tuple[int, str | None]:
    """Kafka's new offset for one partition and the warning its tool prints, if any.

    Explicit offsets (to-offset, shift-by) are clamped to [log start, log end]; a timestamp after the last
    record falls back to the log end. shift-by needs a committed offset.
    """
    match spec.kind:
        case ResetKind.TO_EARLIEST:
            return offsets.log_start, None
        case ResetKind.TO_LATEST:
            return offsets.log_end, None
        case ResetKind.TO_DATETIME | ResetKind.BY_DURATION:
            if offsets.by_timestamp is None or offsets.by_timestamp < 0:
                return offsets.log_end, (f"Partition {partition_name} has no record at or after the timestamp. "
                                         "Falling back to latest known offset.")
            return offsets.by_timestamp, None
        case ResetKind.SHIFT_BY:
            if offsets.current is None:
                raise _invalid(f"Cannot shift offset for partition {partition_name} since there is no current "
                               "committed offset")
            wanted = offsets.current + spec.value
        case ResetKind.TO_OFFSET:
            wanted = spec.value
    if wanted > offsets.log_end:
        return offsets.log_end, (f"New offset ({wanted}) is higher than latest offset for topic partition "
                                 f"{partition_name}. Value will be set to {offsets.log_end}")
    if wanted < offsets.log_start:
        return offsets.log_start, (f"New offset ({wanted}) is lower than earliest offset for topic partition "
                                   f"{partition_name}. Value will be set to {offsets.log_start}")
    return wanted, None
