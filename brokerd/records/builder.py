"""Build one record batch v2 from (key, value) pairs, for records the broker writes itself (the group
coordinator's `__consumer_offsets` records, uncompressed; the metrics publisher's `__strom_metrics` samples,
zstd) and for legacy message sets up-converted on produce (`brokerd.records.legacy`). Never used on the
v2 produce path, where batches arrive built and are stored verbatim.

The batch is what a non-idempotent producer sends: baseOffset 0 and partitionLeaderEpoch -1 (both
rewritten on append), CreateTime timestamps, producer id/epoch/sequence -1, no headers. Layout: see
`brokerd.records.batch`.
"""

import struct
from collections.abc import Sequence

from crc32c import crc32c

from brokerd.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_COMPRESSION,
    NO_TIMESTAMP,
    compress,
)
from brokerd.varints import varint


def _nullable(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def encode_record(offset_delta: int, key: bytes | None, value: bytes | None, timestamp_delta: int = 0) -> bytes:
    """One record (no headers), length prefix included."""
    body = (b"\x00" + varint(timestamp_delta) + varint(offset_delta) + _nullable(key) + _nullable(value)
            + varint(0))
    return varint(len(body)) + body


def build_batch(records: Sequence[tuple[bytes | None, bytes | None]], timestamp_ms: int = NO_TIMESTAMP,
                timestamps: Sequence[int] | None = None, codec: int = NO_COMPRESSION) -> bytes:
    """A v2 batch of `records` (at least one), every record stamped `timestamp_ms`, or each its own of
    `timestamps`; its records section compressed with `codec`."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    stamps = list(timestamps) if timestamps is not None else [timestamp_ms] * len(records)
    base = stamps[0]
    body = b"".join(encode_record(delta, key, value, stamp - base)
                    for delta, ((key, value), stamp) in enumerate(zip(records, stamps, strict=True)))
    return seal_batch(body, len(records), base, max(stamps), codec)


def seal_batch(section: bytes, record_count: int, base_timestamp_ms: int, max_timestamp_ms: int,
               codec: int = NO_COMPRESSION) -> bytes:
    """A v2 batch around an encoded records section (`encode_record`s with offset deltas 0..record_count-1 and
    timestamp deltas from `base_timestamp_ms`): the header and CRC, the section compressed with `codec`."""
    if codec != NO_COMPRESSION:
        section = compress(codec, section)
    batch = bytearray(HEADER_SIZE + len(section))
    HEADER.pack_into(batch, 0, 0, len(batch) - LOG_OVERHEAD, -1, MAGIC, 0, codec, record_count - 1,
                     base_timestamp_ms, max_timestamp_ms, -1, -1, -1, record_count)
    batch[HEADER_SIZE:] = section
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
    return bytes(batch)
