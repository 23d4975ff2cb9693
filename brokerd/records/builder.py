"""Build one record batch v2 from (key, value) pairs, for records the broker writes itself (the group
coordinator's `__consumer_offsets` records, uncompressed; the metrics publisher's `__strom_metrics` samples,
zstd). Never used on the produce path, where batches arrive built and are stored verbatim.

The batch is what a non-idempotent producer sends: baseOffset 0 and partitionLeaderEpoch -1 (both
rewritten on append), CreateTime with every record at `timestamp_ms`, producer id/epoch/sequence -1,
no headers. Layout: see `brokerd.records.batch`.
"""

import struct
from collections.abc import Sequence

import cramjam
from crc32c import crc32c

from brokerd.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_COMPRESSION,
    ZSTD,
)


def _varint(value: int) -> bytes:
    """Zig-zag varint (64-bit), as records encode every integer."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _nullable(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def encode_record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    """One record (timestamp delta 0, no headers), length prefix included."""
    body = b"\x00" + _varint(0) + _varint(offset_delta) + _nullable(key) + _nullable(value) + _varint(0)
    return _varint(len(body)) + body


def build_batch(records: Sequence[tuple[bytes | None, bytes | None]], timestamp_ms: int,
                compression: int = NO_COMPRESSION) -> bytes:
    """A v2 batch of `records` (at least one), every record stamped `timestamp_ms`; `compression` is
    NO_COMPRESSION or ZSTD (the records section compressed as one zstd frame)."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    if compression not in (NO_COMPRESSION, ZSTD):
        raise ValueError(f"unsupported compression codec {compression}")
    body = b"".join(encode_record(delta, key, value) for delta, (key, value) in enumerate(records))
    if compression == ZSTD:
        body = bytes(cramjam.zstd.compress(body))
    batch = bytearray(HEADER_SIZE + len(body))
    HEADER.pack_into(batch, 0, 0, len(batch) - LOG_OVERHEAD, -1, MAGIC, 0, compression, len(records) - 1, timestamp_ms,
                     timestamp_ms, -1, -1, -1, len(records))
    batch[HEADER_SIZE:] = body
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
    return bytes(batch)
