"""Legacy message sets (magic 0 and 1, the formats before Kafka 0.11) ⇄ record batches v2.

Only for clients that still speak them: Produce v0-v2 may carry a message set, which is up-converted
into one v2 batch before the append (Kafka's `LogValidator` does the same; the log only ever stores v2
batches), and Fetch v0-v3 answers with message sets, down-converted from the stored batches (Kafka's
`LazyDownConversionRecords`). The v2 produce and fetch paths never come here. Per record, by necessity.

Message set layout (big-endian), one entry per message::

    offset int64 | message_size int32 | crc uint32 (CRC-32 IEEE of the rest) | magic int8 (0 or 1) |
    attributes int8 (bits 0-2 codec: 0 none, 1 gzip, 2 snappy, 3 lz4; bit 3 LogAppendTime, magic 1) |
    [magic 1: timestamp int64] | key bytes (int32 length, -1 = null) | value bytes (int32 length, -1 = null)

A compressed message ("wrapper") holds a whole inner message set, compressed, as its value; magic 1
inner offsets are relative (0..n-1), magic 0 ones are absolute. Producers' offsets are ignored: the
log assigns offsets. Down-converted message sets are uncompressed, one message per record, at the
record's absolute offset, headers dropped (magic 0/1 have none); control batches are skipped.
"""

import struct
import zlib
from collections.abc import Iterator

from brokerd.records import batch as rb
from brokerd.records.builder import build_batch
from brokerd.records.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError

MAGIC_OFFSET = 16
"""Where a message's magic byte is; a v2 batch's magic sits at the same offset."""
_ENTRY = struct.Struct(">qiIbb")
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_LEGACY_CODECS = (rb.NO_COMPRESSION, rb.GZIP, rb.SNAPPY, rb.LZ4)
_TIMESTAMP_TYPE_FLAG = 0x08


def is_message_set(buf: bytes | bytearray | memoryview) -> bool:
    """True if `buf` starts with a magic 0 or 1 message (else it is v2 batches, or too short to tell)."""
    return len(buf) > MAGIC_OFFSET and buf[MAGIC_OFFSET] in (0, 1)


def _read_bytes(buf: memoryview, position: int, end: int) -> tuple[bytes | None, int]:
    if position + 4 > end:
        raise CorruptRecordError("message ends inside a length")
    (length,) = _LENGTH.unpack_from(buf, position)
    position += 4
    if length < 0:
        return None, position
    if position + length > end:
        raise CorruptRecordError("message field overruns the message")
    return bytes(buf[position : position + length]), position + length


def _messages(buf: memoryview, inner: bool = False) -> Iterator[tuple[int, int | None, bytes | None, bytes | None]]:
    """(codec, timestamp or None for magic 0, key, value) of each message; a wrapper's inner set is
    flattened. As in Kafka, inner messages are never compressed themselves (no nesting, so no recursion),
    and all wrappers of one message set together inflate to at most `rb.MAX_DECOMPRESSED_BYTES`."""
    budget = rb.MAX_DECOMPRESSED_BYTES
    position = 0
    while position < len(buf):
        if position + _ENTRY.size > len(buf):
            raise CorruptRecordError("message set ends inside a message header")
        _offset, size, crc, magic, attributes = _ENTRY.unpack_from(buf, position)
        end = position + 12 + size
        if size < 6 or end > len(buf):
            raise CorruptRecordError(f"message of {size} bytes overruns the message set")
        if magic not in (0, 1):
            raise InvalidRecordError(f"magic {magic} inside a legacy message set")
        if zlib.crc32(buf[position + 16 : end]) != crc:
            raise CorruptRecordError("message CRC mismatch")
        cursor = position + _ENTRY.size
        timestamp = None
        if magic == 1:
            (timestamp,) = _TIMESTAMP.unpack_from(buf, cursor)
            cursor += 8
        key, cursor = _read_bytes(buf, cursor, end)
        value, cursor = _read_bytes(buf, cursor, end)
        codec = attributes & rb.CODEC_MASK
        if codec not in _LEGACY_CODECS:
            raise UnsupportedCompressionTypeError(f"codec {codec} in a magic {magic} message")
        if codec == rb.NO_COMPRESSION:
            yield codec, timestamp, key, value
        elif inner:
            raise InvalidRecordError("a compressed message inside a compressed message set")
        else:
            inflated = rb.decompress(codec, value or b"", budget)
            budget -= len(inflated)
            for _, inner_timestamp, inner_key, inner_value in _messages(inflated, inner=True):
                yield codec, inner_timestamp, inner_key, inner_value
        position = end


def to_batch(message_set: bytes | bytearray | memoryview) -> bytes:
    """One v2 batch holding every message of `message_set`, in order, compressed with the message set's
    codec (Kafka keeps the producer's codec under `compression.type=producer`). Magic 0 messages have no
    timestamp (-1). Raises CorruptRecordError / InvalidRecordError / UnsupportedCompressionTypeError."""
    records = list(_messages(memoryview(message_set)))
    if not records:
        raise InvalidRecordError("a produce request needs at least one message")
    codec = next((c for c, _, _, _ in records if c != rb.NO_COMPRESSION), rb.NO_COMPRESSION)
    return build_batch([(key, value) for _, _, key, value in records],
                       timestamps=[rb.NO_TIMESTAMP if t is None else t for _, t, _, _ in records], codec=codec)


def _message(offset: int, magic: int, timestamp: int, log_append_time: bool, key: bytes | None,
             value: bytes | None) -> bytes:
    attributes = _TIMESTAMP_TYPE_FLAG if magic == 1 and log_append_time else 0
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _TIMESTAMP.pack(timestamp)
    for field in (key, value):
        body += _LENGTH.pack(-1) if field is None else _LENGTH.pack(len(field)) + field
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def from_batches(data: bytes | memoryview, magic: int, first_offset: int) -> bytes:
    """The records of the v2 batches in `data` (whole batches, as the log returns them) at offsets >=
    `first_offset`, as an uncompressed message set of `magic` (0 or 1)."""
    view = memoryview(data)
    out = bytearray()
    for position, header in rb.iter_batches(view):
        if header.is_control:
            continue
        batch = view[position : position + header.size]
        for record in rb.iter_records(batch, header):
            offset = header.base_offset + record.offset_delta
            if offset >= first_offset:
                out += _message(offset, magic, rb.record_timestamp(header, record), header.is_log_append_time,
                                record.key, record.value)
    return bytes(out)


def magic_for_fetch(version: int) -> int:
    """The message format a Fetch version reads: v0-v1 magic 0, v2-v3 magic 1 (v4+ reads v2 batches)."""
    return 0 if version < 2 else 1

