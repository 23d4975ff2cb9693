"""A topic partition of up to hundreds of millions of records, written in seconds: every record batch is one
template (`batch_records` records encoded once) with the batch number written into it, sent as raw Produce
requests. (A client producing record by record costs 5-15 µs a record in Python here; this costs a bytes.replace
and a CRC a batch.) Offsets, timestamps, keys and values are known by construction, so tests check what they read
against `BulkTopic`'s oracle methods.

Record at offset o (W = the digits of the largest offset, at least 7; d = o % batch_records): key `k%0Wd` % o,
value `{"n":"%0Wd","t":"hot"}` when d == HOT_DELTA % batch_records else `{"n":"%0Wd","t":"---"}` — with
`value_bytes`, `,"p":"xx…"` before the closing brace pads it to exactly that size —, CreateTime t0 + 2·o ms, no
headers. `batch_records` is the largest power of ten up to 10,000 whose batch fits in the broker's default
`message.max.bytes` (10,000 for the unpadded values; 1,000 for 1 KiB values).
"""

import re
from dataclasses import dataclass

from brokerd.protocol.api_keys import ApiKey
from brokerd.records.builder import encode_record, seal_batch
from tests.support.kafka_wire import connect, decode_response, encode_request, produce_request, read_frame

BATCH = 10_000
"""Records a batch at most."""
HOT_DELTA = 7777
MAX_BATCH_BYTES = 1_048_576
"""A batch stays within the broker's default `message.max.bytes` (1,048,588)."""
IN_FLIGHT = 32
"""Produce requests sent ahead of their responses."""
_MARK = b"@"
_BATCH_HEADER_BYTES = 61


@dataclass(frozen=True)
class BulkTopic:
    name: str
    records: int
    t0_ms: int
    value_bytes: int = 0
    """0: the unpadded value."""
    batch_records: int = BATCH
    partition: int = 0

    @property
    def digits(self) -> int:
        return max(7, len(str(self.records - 1)))

    def timestamp(self, offset: int) -> int:
        return self.t0_ms + 2 * offset

    def key(self, offset: int) -> bytes:
        return b"k%0*d" % (self.digits, offset)

    def value(self, offset: int) -> bytes:
        hot = offset % self.batch_records == HOT_DELTA % self.batch_records
        return _value(b"%0*d" % (self.digits, offset), hot, self.value_bytes)

    def hot_offsets(self, start: int = 0) -> list[int]:
        """Offsets ≥ start whose value has `"t":"hot"` (one a batch)."""
        return [o for o in range(HOT_DELTA % self.batch_records, self.records, self.batch_records) if o >= start]


def _value(number: bytes, hot: bool, value_bytes: int) -> bytes:
    value = b'{"n":"%s","t":"%s"' % (number, b"hot" if hot else b"---")
    if value_bytes:
        padding = value_bytes - len(value) - len(b',"p":""}')
        assert padding >= 0, f"values of {value_bytes} B cannot hold {value!r}"
        value += b',"p":"%s"' % (b"x" * padding)
    return value + b"}"


def _template(topic: BulkTopic) -> bytes:
    """The records section of every batch, the batch number's digits marked."""
    in_batch = len(str(topic.batch_records)) - 1
    mark = _MARK * (topic.digits - in_batch)
    hot = HOT_DELTA % topic.batch_records
    section = b"".join(
        encode_record(d, b"k" + mark + b"%0*d" % (in_batch, d), _value(mark + b"%0*d" % (in_batch, d), d == hot,
                                                                         topic.value_bytes), 2 * d)
        for d in range(topic.batch_records))
    assert len(re.findall(re.escape(mark), section)) == 2 * topic.batch_records, "marks only where batch numbers go"
    return section


def _planned(name: str, records: int, t0_ms: int, value_bytes: int, partition: int) -> tuple[BulkTopic, bytes]:
    """The topic's layout and its template: the largest power-of-ten batch (≥ 10) that fits in MAX_BATCH_BYTES."""
    batch_records = BATCH
    while True:
        topic = BulkTopic(name, records, t0_ms, value_bytes, batch_records, partition)
        template = _template(topic)
        if len(template) + _BATCH_HEADER_BYTES <= MAX_BATCH_BYTES or batch_records == 10:
            return topic, template
        batch_records //= 10


def write_bulk_topic(broker, name: str, records: int, t0_ms: int, value_bytes: int = 0,
                     partition: int = 0) -> BulkTopic:
    """Append `records` (a multiple of the batch size) to `partition` of the existing, empty topic `name`
    (acks=1); `value_bytes` pads every value to that size (0: unpadded, ~24 B)."""
    topic, template = _planned(name, records, t0_ms, value_bytes, partition)
    size, batches = topic.batch_records, records // topic.batch_records
    assert records % size == 0, f"{records:,} records are not whole batches of {size:,}"
    width = topic.digits - (len(str(size)) - 1)
    mark = _MARK * width
    with connect(broker, timeout_s=60) as sock:
        def acknowledged(b: int) -> None:
            correlation_id, response = decode_response(ApiKey.PRODUCE, 7, read_frame(sock))
            (answer,) = response.responses[0].partition_responses
            assert (correlation_id, answer.error_code, answer.base_offset) == (b, 0, b * size), answer

        for b in range(batches):
            base = t0_ms + 2 * b * size
            batch = seal_batch(template.replace(mark, b"%0*d" % (width, b)), size, base, base + 2 * (size - 1))
            sock.sendall(encode_request(ApiKey.PRODUCE, 7, b, produce_request(name, batch, partition)))
            if b >= IN_FLIGHT:
                acknowledged(b - IN_FLIGHT)
        for b in range(max(batches - IN_FLIGHT, 0), batches):
            acknowledged(b)
    return topic
