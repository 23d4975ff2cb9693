"""A single-partition topic of up to 10 million small records, written in seconds: every record batch is one
template (10,000 records encoded once) with the batch number written into it, sent as raw Produce requests.
(A client producing record by record costs 5-15 µs a record in Python here; this costs a bytes.replace and a
CRC a batch.) Offsets, timestamps, keys and values are known by construction, so tests check what they read
against `BulkTopic`'s oracle methods.

Record at offset o (b = o // 10,000, d = o % 10,000): key `k%07d` % o, value `{"n":"%07d","t":"hot"}` when
d == HOT_DELTA else `{"n":"%07d","t":"---"}`, CreateTime t0 + 2·o ms, no headers.
"""

import re
from dataclasses import dataclass

from brokerd.protocol.api_keys import ApiKey
from brokerd.records.builder import encode_record, seal_batch
from tests.support.kafka_wire import connect, decode_response, encode_request, produce_request, read_frame

BATCH = 10_000
HOT_DELTA = 7777
_MARK = b"@@@"


@dataclass(frozen=True)
class BulkTopic:
    name: str
    records: int
    t0_ms: int

    def timestamp(self, offset: int) -> int:
        return self.t0_ms + 2 * offset

    @staticmethod
    def key(offset: int) -> bytes:
        return b"k%07d" % offset

    @staticmethod
    def value(offset: int) -> bytes:
        return b'{"n":"%07d","t":"%s"}' % (offset, b"hot" if offset % BATCH == HOT_DELTA else b"---")

    def hot_offsets(self, start: int = 0) -> list[int]:
        """Offsets ≥ start whose value has `"t":"hot"` (one a batch)."""
        return [o for o in range(HOT_DELTA, self.records, BATCH) if o >= start]


def _template() -> bytes:
    values = (b'{"n":"' + _MARK + b'%04d","t":"%s"}' % (d, b"hot" if d == HOT_DELTA else b"---") for d in range(BATCH))
    section = b"".join(encode_record(d, b"k" + _MARK + b"%04d" % d, value, 2 * d) for d, value in enumerate(values))
    assert len(re.findall(re.escape(_MARK), section)) == 2 * BATCH, "the mark occurs only where batch numbers go"
    return section


def write_bulk_topic(broker, name: str, records: int, t0_ms: int) -> BulkTopic:
    """Append `records` (a multiple of 10,000) to partition 0 of the existing, empty topic `name` (acks=1)."""
    assert records % BATCH == 0 and records // BATCH <= 1000
    template = _template()
    with connect(broker, timeout_s=60) as sock:
        for b in range(records // BATCH):
            base = t0_ms + 2 * b * BATCH
            batch = seal_batch(template.replace(_MARK, b"%03d" % b), BATCH, base, base + 2 * (BATCH - 1))
            sock.sendall(encode_request(ApiKey.PRODUCE, 7, b, produce_request(name, batch)))
        for b in range(records // BATCH):
            correlation_id, response = decode_response(ApiKey.PRODUCE, 7, read_frame(sock))
            (partition,) = response.responses[0].partition_responses
            assert (correlation_id, partition.error_code, partition.base_offset) == (b, 0, b * BATCH), partition
    return BulkTopic(name, records, t0_ms)
