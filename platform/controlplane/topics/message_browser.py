"""The message browser's reads and test produces, over the Kafka protocol as an ordinary client (confluent-kafka).

A page is one bounded read: the consumer is assigned the chosen partitions at computed offsets (a seek costs the
broker one offset-index lookup, so a page opens as fast at the end of a 10 GiB topic as at its start), fetches are
capped (`fetch.max.bytes`, `queued.max.messages.kbytes`), and a request examines at most `scan_budget` records
and waits at most `timeout_s`. Whatever is left is reached with the page's `cursor` (per partition, the next offset
to read: `"0:120,1:98"`), never by an unbounded scan. Newest-first pages read backwards in growing windows.

Offsets are Kafka offsets; timestamps ms since the epoch.
"""

import datetime
import time
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition

from controlplane.core.errors import KafkaApiError
from controlplane.groups.kafka_client import bootstrap_servers

from .message_format import DECODINGS, AvroSchema, Decoding, Filter, Message
from .models import Topic

__all__ = ("MAX_LIMIT", "SCAN_BUDGET", "BrowseRequest", "Page", "ProduceResult", "Start", "browse",
           "parse_browse_request", "parse_cursor", "produce")

MAX_LIMIT = 500
"""Messages a page shows at most."""
SCAN_BUDGET = 20_000
"""Records one request examines at most (filters that match rarely continue with the cursor)."""
FETCH_MAX_BYTES = 4 * 1024 * 1024
FETCH_QUEUE_BACKOFF_MS = 20
"""How long librdkafka waits to fetch again once FETCH_MAX_BYTES are queued (its default, 1,000 ms, made a
filter's 20,000-record scan of 1 KiB values take seconds instead of half of one)."""
TIMEOUT_S = 5.0
CLIENT_ID = "strom-console-browser"
EARLIEST, LATEST, OFFSET, TIMESTAMP = "earliest", "latest", "offset", "timestamp"


@dataclass(frozen=True)
class Start:
    """Where a page starts: the log start (`earliest`), `latest` minus `value` records per partition, an `offset`
    (the same in every chosen partition), or the first record at or after `timestamp` `value` (ms). Reading
    newest-first, the page ends there instead (earliest: nothing is older; latest: the newest record)."""

    kind: str = LATEST
    value: int = 0

    def __post_init__(self):
        if self.kind not in (EARLIEST, LATEST, OFFSET, TIMESTAMP):
            raise KafkaApiError("INVALID_REQUEST", f"start must be earliest, latest, offset or timestamp, not "
                                                   f"{self.kind!r}")
        if self.value < 0:
            raise KafkaApiError("INVALID_REQUEST", "offsets, timestamps and record counts are not negative")


@dataclass
class Page:
    messages: list[Message]
    cursor: str | None
    """Continue here (same request, with this cursor); None when the read reached the log's end (or start)."""
    scanned: int
    """Records examined for this page (≤ the scan budget)."""
    watermarks: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Per partition: (log start offset, high watermark) when the page was read."""


@dataclass(frozen=True)
class ProduceResult:
    partition: int
    offset: int
    timestamp_ms: int


def parse_cursor(cursor: str) -> dict[int, int]:
    try:
        return {int(p): int(o) for p, o in (part.split(":") for part in cursor.split(",") if part)}
    except ValueError:
        raise KafkaApiError("INVALID_REQUEST", f"bad cursor {cursor!r}: expected partition:offset,…") from None


def _cursor(positions: dict[int, int]) -> str:
    return ",".join(f"{p}:{o}" for p, o in sorted(positions.items()))


def _partitions(topic: str, wanted: Iterable[int] | None) -> list[int]:
    existing = list(Topic.objects.filter(name=topic).values_list("partitions__partition", flat=True))
    if not existing:
        raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"This server does not host this topic: {topic}")
    if wanted is None:
        return sorted(p for p in existing if p is not None)
    unknown = sorted(set(wanted) - set(existing))
    if unknown:
        raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {topic} has no partition {unknown[0]}")
    return sorted(set(wanted))


def _fail(action: str, error: KafkaError | Exception) -> KafkaApiError:
    if isinstance(error, KafkaException):
        error = error.args[0]
    if isinstance(error, KafkaError):
        status = 503 if error.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                                         KafkaError._ALL_BROKERS_DOWN) else 502
        return KafkaApiError(error.name().lstrip("_"), f"Could not {action}: {error.str()}", status)
    return KafkaApiError("UNKNOWN_SERVER_ERROR", f"Could not {action}: {error}", 502)


def _message(raw) -> Message:
    kind, timestamp = raw.timestamp()
    return Message(raw.partition(), raw.offset(), timestamp,
                   "LogAppendTime" if kind == TIMESTAMP_LOG_APPEND_TIME else "CreateTime",
                   raw.key(), raw.value(), tuple((k, v) for k, v in (raw.headers() or ())))


class _Reader:
    """One consumer (no group membership, never commits) reading offset ranges of one topic."""

    def __init__(self, topic: str, timeout_s: float):
        self.topic = topic
        self.deadline = time.monotonic() + timeout_s
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap_servers(), "client.id": CLIENT_ID, "group.id": CLIENT_ID,
            "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest",
            "fetch.max.bytes": FETCH_MAX_BYTES, "max.partition.fetch.bytes": FETCH_MAX_BYTES // 4,
            "queued.max.messages.kbytes": FETCH_MAX_BYTES // 1024, "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
            "fetch.wait.max.ms": 50, "socket.timeout.ms": int(timeout_s * 1000)})

    def time_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def watermarks(self, partitions: list[int]) -> dict[int, tuple[int, int]]:
        try:
            return {p: self.consumer.get_watermark_offsets(KafkaTopicPartition(self.topic, p), timeout=self.time_left(),
                                                           cached=False) for p in partitions}
        except KafkaException as e:
            raise _fail(f"read the offsets of {self.topic}", e) from None

    def offsets_for_time(self, partitions: list[int], timestamp_ms: int, high: dict[int, int]) -> dict[int, int]:
        """First offset at or after the time per partition (the high watermark if none is)."""
        try:
            found = self.consumer.offsets_for_times([KafkaTopicPartition(self.topic, p, timestamp_ms)
                                                     for p in partitions], timeout=self.time_left())
        except KafkaException as e:
            raise _fail(f"look up offsets by time in {self.topic}", e) from None
        return {tp.partition: tp.offset if tp.offset >= 0 else high[tp.partition] for tp in found}

    def read(self, ranges: dict[int, tuple[int, int]], budget: int, match: Filter | None = None,
             wanted: int | None = None) -> tuple[list[Message], dict[int, int], int]:
        """Records in [start, end) of each partition, until every range is read, `budget` records were examined
        or the deadline passed; with `wanted`, a partition also stops once `wanted` of its records pass `match`
        (so merging the partitions by time still yields the first `wanted` of all). Returns (records, next offset
        to read per partition, records examined)."""
        position = {p: start for p, (start, end) in ranges.items() if start < end}
        records: list[Message] = []
        if not position:
            return records, {p: start for p, (start, _) in ranges.items()}, 0
        self.consumer.assign([KafkaTopicPartition(self.topic, p, o) for p, o in position.items()])
        pending, matched = set(position), dict.fromkeys(position, 0)
        every_record_counts = match is None or match.is_empty
        while pending and len(records) < budget and self.time_left() > 0:
            # consume() waits for `batch` records or its timeout: never ask for more than the ranges hold
            batch = min(1000, budget - len(records), sum(ranges[p][1] - position[p] for p in pending))
            if wanted is not None and every_record_counts:  # take no more than the partitions still need
                batch = min(batch, sum(wanted - matched[p] for p in pending))
            for raw in self.consumer.consume(num_messages=batch, timeout=min(0.2, self.time_left())):
                p = raw.partition()
                if p not in pending:
                    continue
                if raw.error() is not None:
                    if raw.error().code() != KafkaError._PARTITION_EOF:
                        raise _fail(f"read {self.topic}-{p}", raw.error())
                    position[p] = ranges[p][1]  # the high watermark: nothing more to read up to `end`
                elif raw.offset() < ranges[p][1]:
                    records.append(_message(raw))
                    matched[p] += every_record_counts or match.matches(records[-1])
                    position[p] = raw.offset() + 1
                else:
                    position[p] = ranges[p][1]  # past the range (offsets up to `end` were compacted away)
                if position[p] >= ranges[p][1] or (wanted is not None and matched[p] >= wanted):
                    pending.discard(p)
                    # drops what librdkafka prefetched for it (up to a whole batch: ~1 MiB) instead of
                    # passing those records through consume() only to skip them
                    self.consumer.pause([KafkaTopicPartition(self.topic, p)])
        self.consumer.resume([KafkaTopicPartition(self.topic, p) for p in position])  # a pause outlives unassign
        self.consumer.unassign()
        return records, {p: position.get(p, start) for p, (start, _) in ranges.items()}, len(records)

    def close(self) -> None:
        self.consumer.close()


def browse(topic: str, partitions: Iterable[int] | None = None, start: Start | None = None,
           newest_first: bool = False, limit: int = 50, match: Filter | None = None, cursor: str = "",
           scan_budget: int = SCAN_BUDGET, timeout_s: float = TIMEOUT_S) -> Page:
    """One page of `topic`'s messages (at most `limit` matching `match`), forward in time from `start`, or
    newest-first ending at it; `cursor` continues a previous page of the same request."""
    if not 1 <= limit <= MAX_LIMIT:
        raise KafkaApiError("INVALID_REQUEST", f"limit must be between 1 and {MAX_LIMIT}")
    start, match = start or Start(), match or Filter()
    chosen = _partitions(topic, partitions)
    reader = _Reader(topic, timeout_s)
    try:
        marks = reader.watermarks(chosen)
        low = {p: lo for p, (lo, _) in marks.items()}
        high = {p: hi for p, (_, hi) in marks.items()}
        if cursor:
            continued = parse_cursor(cursor)
            origin = {p: min(max(continued.get(p, high[p] if not newest_first else low[p]), low[p]), high[p])
                      for p in chosen}
        else:
            origin = _origin(reader, chosen, start, newest_first, low, high)
        read = _backward if newest_first else _forward
        messages, positions, scanned = read(reader, origin, low, high, limit, match, scan_budget)
    finally:
        reader.close()
    finished = all(positions[p] <= low[p] for p in chosen) if newest_first else \
        all(positions[p] >= high[p] for p in chosen)
    return Page(messages, None if finished else _cursor(positions), scanned, marks)


def _origin(reader: _Reader, chosen: list[int], start: Start, newest_first: bool, low: dict[int, int],
            high: dict[int, int]) -> dict[int, int]:
    """Per partition the first offset to read (forward) or the end of the read (newest-first, exclusive)."""
    def clamp(p: int, offset: int) -> int:
        return min(max(offset, low[p]), high[p])

    if start.kind == EARLIEST:
        return dict(low)
    if start.kind == LATEST:
        return dict(high) if newest_first else {p: clamp(p, high[p] - start.value) for p in chosen}
    if start.kind == OFFSET:
        return {p: clamp(p, start.value + (1 if newest_first else 0)) for p in chosen}
    return {p: clamp(p, o) for p, o in reader.offsets_for_time(chosen, start.value, high).items()}


def _trim(matches: list[Message], limit: int, newest_first: bool) -> tuple[list[Message], list[Message]]:
    matches.sort(key=lambda m: (m.timestamp_ms, m.partition, m.offset), reverse=newest_first)
    return matches[:limit], matches[limit:]


def _forward(reader, origin, low, high, limit, match, budget):
    records, positions, scanned = reader.read({p: (o, high[p]) for p, o in origin.items()}, budget, match, limit)
    shown, cut = _trim([m for m in records if match.matches(m)], limit, newest_first=False)
    for m in cut:  # the next page starts with what this page cut
        positions[m.partition] = min(positions[m.partition], m.offset)
    return shown, positions, scanned


def _backward(reader, origin, low, high, limit, match, budget):
    ends, matches, scanned = dict(origin), [], 0
    window = max(limit // max(len(origin), 1), 1)
    while len(matches) < limit and scanned < budget and reader.time_left() > 0 and any(
            ends[p] > low[p] for p in ends):
        ranges = {p: (max(low[p], e - window), e) for p, e in ends.items() if e > low[p]}
        records, positions, examined = reader.read(ranges, budget - scanned)
        scanned += examined
        # A window read only in part (budget, deadline) holds its older records only: drop them, and read the
        # whole window again on the next page, so newest-first never skips a newer record.
        partial = {p for p, (_, end) in ranges.items() if positions[p] < end}
        matches.extend(m for m in records if m.partition not in partial and match.matches(m))
        for p, (begin, _) in ranges.items():
            if p not in partial:
                ends[p] = begin
        if partial:
            break
        window = min(window * 2, budget)
    shown, cut = _trim(matches, limit, newest_first=True)
    for m in cut:  # the next page ends just above what this page cut
        ends[m.partition] = max(ends[m.partition], m.offset + 1)
    return shown, ends, scanned


def produce(topic: str, value: bytes | None, key: bytes | None = None, headers: list[tuple[str, bytes]] = (),
            partition: int | None = None, timeout_s: float = TIMEOUT_S) -> ProduceResult:
    """One record, acks=all; partition None: by key (librdkafka's murmur2, as Kafka's Java client), else sticky."""
    if partition is not None:
        _partitions(topic, [partition])
    else:
        _partitions(topic, None)
    producer = Producer({"bootstrap.servers": bootstrap_servers(), "client.id": CLIENT_ID, "acks": "all",
                         "linger.ms": 0, "message.timeout.ms": int(timeout_s * 1000),
                         "partitioner": "murmur2_random"})
    delivered: list = []
    producer.produce(topic, value=value, key=key, headers=list(headers),
                     partition=-1 if partition is None else partition,
                     on_delivery=lambda error, message: delivered.append((error, message)))
    producer.flush(timeout_s + 1)
    if not delivered:
        raise KafkaApiError("REQUEST_TIMED_OUT", f"No acknowledgement from {topic} within {timeout_s} s", 503)
    error, message = delivered[0]
    if error is not None:
        raise _fail(f"produce to {topic}", error)
    return ProduceResult(message.partition(), message.offset(), message.timestamp()[1])


@dataclass(frozen=True)
class BrowseRequest:
    """A browse request as the REST API and the console take it (query parameters), parsed once for both."""

    partitions: list[int] | None
    start: Start
    newest_first: bool
    limit: int
    match: Filter
    cursor: str
    decoding: Decoding

    def run(self, topic: str) -> Page:
        return browse(topic, self.partitions, self.start, self.newest_first, self.limit, self.match, self.cursor)


def _int(params: Mapping[str, str], name: str, default: int) -> int:
    raw = params.get(name, "")
    if raw.strip() == "":
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise KafkaApiError("INVALID_REQUEST", f"{name} must be a whole number, not {raw!r}") from None


def _timestamp_ms(raw: str, zone: str) -> int:
    """Milliseconds since the epoch, or ISO 8601 (without an offset: in `zone`, an IANA name)."""
    if raw.strip().lstrip("-").isdecimal():
        return int(raw.strip())
    try:
        moment = datetime.datetime.fromisoformat(raw.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=zoneinfo.ZoneInfo(zone or "UTC"))
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        raise KafkaApiError("INVALID_REQUEST", f"timestamp must be ms since the epoch or ISO 8601 "
                                               f"(e.g. 2024-01-31T12:00:00), in a known time zone; got {raw!r}"
                            ) from None
    return int(moment.timestamp() * 1000)


def _avro_schema(params: Mapping[str, str]) -> AvroSchema:
    """decode=avro's `avro_schema` (JSON) and optional `schema_id`."""
    text = params.get("avro_schema", "").strip()
    if not text:
        raise KafkaApiError("INVALID_REQUEST", "decode=avro needs the values' Avro schema (avro_schema, JSON)")
    schema_id = _int(params, "schema_id", -1) if params.get("schema_id", "").strip() else None
    if schema_id is not None and not 0 <= schema_id < 2**32:
        raise KafkaApiError("INVALID_REQUEST", "schema_id is a schema registry id (0 to 4294967295)")
    try:
        return AvroSchema(text, schema_id)
    except ValueError as e:
        raise KafkaApiError("INVALID_REQUEST", f"avro_schema: {e}") from None


def parse_browse_request(params: Mapping[str, str]) -> BrowseRequest:
    """`partitions=0,2` (blank: all), `start=earliest|latest|offset|timestamp` with `last=N` (latest − N),
    `offset=N` or `timestamp=ms|ISO` (+ `tz=Europe/Paris` for an ISO time without offset), `order=oldest|newest`,
    `limit`, `key_contains`, `value_contains`, `header=name[=value]`, `json_path=$.a.b == v`,
    `decode=text|json|hex|base64|avro` (avro: `avro_schema` = the values' schema as JSON, optional `schema_id` that
    the values must carry; a JSON path then applies to the decoded record), `cursor`."""
    raw_partitions = params.get("partitions", "").strip()
    try:
        partitions = [int(p) for p in raw_partitions.split(",") if p.strip()] if raw_partitions else None
    except ValueError:
        raise KafkaApiError("INVALID_REQUEST", f"partitions must be numbers separated by commas, not "
                                               f"{raw_partitions!r}") from None
    kind = params.get("start", "") or LATEST
    value = {LATEST: lambda: _int(params, "last", 0 if params.get("order") == "newest" else 50),
             OFFSET: lambda: _int(params, "offset", 0),
             TIMESTAMP: lambda: _timestamp_ms(params.get("timestamp", ""), params.get("tz", "UTC"))
             }.get(kind, lambda: 0)()
    order = params.get("order", "") or "oldest"
    decoding = params.get("decode", "") or "text"
    if order not in ("oldest", "newest"):
        raise KafkaApiError("INVALID_REQUEST", "order must be oldest (forward in time) or newest (newest first)")
    if decoding not in DECODINGS:
        raise KafkaApiError("INVALID_REQUEST", f"decode must be one of {', '.join(DECODINGS)}")
    schema = _avro_schema(params) if decoding == "avro" else None
    try:
        match = Filter(params.get("key_contains", ""), params.get("value_contains", ""), params.get("header", ""),
                       params.get("json_path", "").strip(), schema)
    except ValueError as e:
        raise KafkaApiError("INVALID_REQUEST", str(e)) from None
    return BrowseRequest(partitions, Start(kind, value), order == "newest", _int(params, "limit", 50), match,
                         params.get("cursor", ""), Decoding(decoding, schema))
