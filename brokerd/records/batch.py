"""Kafka record batch v2 (magic 2): header codec, validation, and record decoding for the few callers
that must look inside a batch.

Header layout (61 bytes, big-endian; `DefaultRecordBatch.java`)::

    off size field
     0   8   baseOffset int64            rewritten by the broker, outside the CRC
     8   4   batchLength int32           bytes after this field (batch size = 12 + batchLength)
    12   4   partitionLeaderEpoch int32  rewritten by the broker, outside the CRC
    16   1   magic int8                  2
    17   4   crc uint32                  CRC-32C (Castagnoli) of bytes [21, end)
    21   2   attributes int16            bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
                                         6 delete horizon set (baseTimestamp holds it)
    23   4   lastOffsetDelta int32
    27   8   baseTimestamp int64
    35   8   maxTimestamp int64
    43   8   producerId int64
    51   2   producerEpoch int16
    53   4   baseSequence int32
    57   4   recordCount int32
    61   …   records (the whole section compressed as one stream when codec != 0)

Record (all integers zig-zag varints)::

    length | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength (-1 = null) key | valueLength (-1 = null) value | headerCount [headers…]

The append and fetch paths only use the header functions (`read_produced_batch`, `iter_batches`,
`verify_crc`, `assign_offsets`, `set_log_append_time`): one `struct` call and one CRC per batch, never per record.
`iter_records` decompresses and decodes records; it serves compaction, key checks on compacted
topics, timestamp limits and timestamp lookups only. Sans-IO: bytes in, values out.
"""

import struct
from collections.abc import Iterator
from typing import NamedTuple

import cramjam
from crc32c import crc32c

from brokerd.records.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError
from brokerd.varints import VarintError, read_varint

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size
LOG_OVERHEAD = 12
"""baseOffset + batchLength: the bytes of a batch that batchLength does not count."""
MAGIC = 2
LEADER_EPOCH = struct.Struct(">i")
BASE_OFFSET = struct.Struct(">q")
MAX_TIMESTAMP = struct.Struct(">q")
LEADER_EPOCH_OFFSET = 12
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

CODEC_MASK = 0x07
NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD = range(5)
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40
NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1


class BatchHeader(NamedTuple):
    """The 13 header fields in wire order (see the module docstring)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & LOG_APPEND_TIME_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


def read_header(buf, position: int = 0) -> BatchHeader:
    """Decode the header at `position`; the caller guarantees `HEADER_SIZE` bytes are there."""
    return BatchHeader._make(HEADER.unpack_from(buf, position))


def iter_batches(buf: memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yield `(position, header)` for each whole batch in `buf`, checking only the framing.

    Raises CorruptRecordError when a header or a batch does not fit in the buffer (a torn batch).
    Magic, CRC and counts are the caller's business (`validate_header`, `verify_crc`).
    """
    end = len(buf)
    position = 0
    unpack_from = HEADER.unpack_from
    make = BatchHeader._make
    while position < end:
        if end - position < HEADER_SIZE:
            raise CorruptRecordError(f"{end - position} trailing bytes are shorter than a batch header")
        header = make(unpack_from(buf, position))
        size = LOG_OVERHEAD + header.batch_length
        if size < HEADER_SIZE or position + size > end:
            raise CorruptRecordError(f"batch at byte {position} declares {size} bytes, {end - position} left")
        yield position, header
        position += size


def whole_batches_length(buf: memoryview) -> int:
    """The length of the longest prefix of `buf` made of whole batches (a fetch response may end with a
    partial batch cut at max_bytes, KIP-74). Reads one header per batch."""
    end = len(buf)
    position = 0
    while end - position >= HEADER_SIZE:
        size = LOG_OVERHEAD + HEADER.unpack_from(buf, position)[1]
        if size < HEADER_SIZE or position + size > end:
            break
        position += size
    return position


def validate_header(header: BatchHeader) -> None:
    """The per-batch rules every stored batch obeys (Kafka `DefaultRecordBatch.ensureValid` and the
    `LogValidator` header checks): magic 2, a known codec, and at least one record.
    """
    if header.magic != MAGIC:
        raise InvalidRecordError(f"magic {header.magic} is not supported; only record batch v2 (magic 2)")
    if header.codec > ZSTD:
        raise UnsupportedCompressionTypeError(f"unknown compression codec id {header.codec}")
    if header.record_count <= 0 or header.last_offset_delta < 0:
        raise InvalidRecordError(
            f"batch declares {header.record_count} records and last offset delta {header.last_offset_delta}"
        )


def read_produced_batch(records: bytes | bytearray) -> BatchHeader:
    """The header of the one batch a producer sends for a partition, checked once against the rules of a
    client's batch (Kafka's `ProduceRequest.validateRecords` and `LogValidator.validateBatch` for client
    appends): exactly one whole batch, not a control batch, a record count that agrees with
    lastOffsetDelta, and a base sequence for an idempotent batch. Magic, codec and CRC are checked by
    storage on append (`validate_header`, `verify_crc`); records are never decoded here.

    Raises CorruptRecordError for a truncated batch, InvalidRecordError for any other violation.
    """
    if len(records) < HEADER_SIZE:
        raise CorruptRecordError(f"record batch of {len(records)} bytes is shorter than its header")
    header = read_header(records)
    if header.size > len(records):
        raise CorruptRecordError("record batch length runs past the end of the request")
    if header.size < len(records):
        raise InvalidRecordError("Produce requests must carry exactly one record batch per partition")
    if header.is_control:
        raise InvalidRecordError("clients may not send control batches")
    if header.record_count != header.last_offset_delta + 1:
        raise InvalidRecordError(
            f"record count {header.record_count} disagrees with lastOffsetDelta {header.last_offset_delta}"
        )
    if header.producer_id != NO_PRODUCER_ID and header.base_sequence < 0:
        raise InvalidRecordError("idempotent batches need a base sequence >= 0")
    return header


def compute_crc(buf: memoryview, position: int, size: int) -> int:
    """CRC-32C over the CRC-covered region [21, size) of the batch at `position`."""
    return crc32c(buf[position + ATTRIBUTES_OFFSET : position + size])


def verify_crc(buf: memoryview, position: int, header: BatchHeader) -> None:
    actual = compute_crc(buf, position, header.size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"batch at byte {position}: CRC-32C is {actual:#010x}, header says {header.crc:#010x}"
        )


def assign_offsets(buf: bytearray | memoryview, position: int, base_offset: int, leader_epoch: int) -> None:
    """Rewrite baseOffset and partitionLeaderEpoch in place; both lie outside the CRC."""
    BASE_OFFSET.pack_into(buf, position, base_offset)
    LEADER_EPOCH.pack_into(buf, position + LEADER_EPOCH_OFFSET, leader_epoch)


def set_log_append_time(buf: bytearray | memoryview, position: int, header: BatchHeader, now_ms: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp = `now_ms` and recompute its CRC (Kafka
    `setMaxTimestamp`): the only header change that touches CRC-covered bytes."""
    struct.pack_into(">h", buf, position + ATTRIBUTES_OFFSET, header.attributes | LOG_APPEND_TIME_FLAG)
    MAX_TIMESTAMP.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, now_ms)
    struct.pack_into(">I", buf, position + CRC_OFFSET, compute_crc(memoryview(buf), position, header.size))


class Record(NamedTuple):
    """One decoded record. `raw` is its complete encoding (length prefix included), relative to the
    batch's baseOffset and baseTimestamp, so a filtered batch with the same base can reuse it verbatim."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    raw: memoryview


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_CHUNK_LENGTH = struct.Struct(">i")


MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024
"""The most a batch's records section (or a legacy wrapper message) may inflate to: a batch that would
decompress to more is refused with INVALID_RECORD, having cost at most this much memory (a decompression
bomb: 10 MB of gzip-compressed zeros inflate to 10 GB). Kafka's own limit is implicit (the JVM heap); 128 MiB is 128
times `message.max.bytes`' default, far beyond what a real producer's compression reaches."""
_FIRST_GUESS_RATIO = 8
_MIN_GUESS = 64 * 1024
_BUFFER_TOO_SMALL = "failed to write whole buffer"
_STREAM_DECOMPRESSORS = {GZIP: cramjam.gzip, LZ4: cramjam.lz4, ZSTD: cramjam.zstd}


def _bounded(module, data: bytes | memoryview, limit: int) -> memoryview:
    """`data` decompressed by a cramjam codec module into a buffer that starts at 8x the input and grows
    4x while the output does not fit, up to `limit` bytes: never more memory than the output needs (or
    the limit) and at most about twice the work."""
    size = min(limit, max(_MIN_GUESS, _FIRST_GUESS_RATIO * len(data)))
    while True:
        out = bytearray(size)
        try:
            return memoryview(out)[: module.decompress_into(data, out)]
        except cramjam.DecompressionError as exc:
            if _BUFFER_TOO_SMALL not in str(exc):
                raise
            if size >= limit:
                raise InvalidRecordError(f"records decompress to more than {limit} bytes") from None
            size = min(limit, size * 4)


def _snappy_length(data: memoryview, limit: int) -> int:
    """The decompressed length a raw snappy block declares, checked against `limit` before inflating."""
    length = cramjam.snappy.decompress_raw_len(data)
    if length > limit:
        raise InvalidRecordError(f"records decompress to more than {limit} bytes")
    return length


def _snappy_decompress(data: memoryview, limit: int) -> memoryview:
    """Kafka's Java producer frames snappy the xerial way (header + length-prefixed raw blocks); others
    send one raw block. Every block's declared length is checked before it is inflated."""
    if bytes(data[: len(_XERIAL_MAGIC)]) != _XERIAL_MAGIC:
        _snappy_length(data, limit)
        return memoryview(bytes(cramjam.snappy.decompress_raw(data)))
    out = bytearray()
    position = _XERIAL_HEADER_SIZE
    while position < len(data):
        if position + _CHUNK_LENGTH.size > len(data):
            raise CorruptRecordError("xerial snappy chunk length truncated")
        (length,) = _CHUNK_LENGTH.unpack_from(data, position)
        position += _CHUNK_LENGTH.size
        if length < 0 or position + length > len(data):
            raise CorruptRecordError(f"xerial snappy chunk of {length} bytes overruns the batch")
        block = data[position : position + length]
        _snappy_length(block, limit - len(out))
        out += cramjam.snappy.decompress_raw(block)
        position += length
    return memoryview(out)


def _snappy_compress(data: bytes) -> bytes:
    """Xerial framing, as Kafka's Java producer writes it: header, then length-prefixed raw blocks."""
    block = bytes(cramjam.snappy.compress_raw(data))
    return _XERIAL_MAGIC + struct.pack(">ii", 1, 1) + _CHUNK_LENGTH.pack(len(block)) + block


_COMPRESSORS = {
    GZIP: lambda data: bytes(cramjam.gzip.compress(data)),
    SNAPPY: _snappy_compress,
    LZ4: lambda data: bytes(cramjam.lz4.compress(data)),
    ZSTD: lambda data: bytes(cramjam.zstd.compress(data)),
}


def decompress(codec: int, data: bytes | memoryview, limit: int = MAX_DECOMPRESSED_BYTES) -> memoryview:
    """`data` decompressed with `codec` (batch attributes bits 0-2, not NO_COMPRESSION). Raises
    InvalidRecordError beyond `limit` bytes (never holding more than that), CorruptRecordError for a
    stream that does not decompress, UnsupportedCompressionTypeError for an unknown codec."""
    try:
        if codec == SNAPPY:
            return _snappy_decompress(memoryview(data), limit)
        module = _STREAM_DECOMPRESSORS.get(codec)
        if module is None:
            raise UnsupportedCompressionTypeError(f"unknown compression codec id {codec}")
        return _bounded(module, data, limit)
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"batch does not decompress: {exc}") from None


def compress(codec: int, data: bytes) -> bytes:
    """`data` compressed with `codec` (not NO_COMPRESSION), framed as Kafka's clients frame it."""
    return _COMPRESSORS[codec](data)


def records_section(batch: memoryview, header: BatchHeader) -> memoryview:
    """The decompressed records of one batch (`batch` starts at its baseOffset)."""
    body = batch[HEADER_SIZE : header.size]
    if header.codec == NO_COMPRESSION:
        return body
    return decompress(header.codec, body)


def iter_records(batch: memoryview, header: BatchHeader) -> Iterator[Record]:
    """Decode the records of one batch; raises CorruptRecordError if they overrun their section or
    their number differs from the header's recordCount."""
    section = records_section(batch, header)
    try:
        yield from _decode_records(section, header.record_count)
    except VarintError as exc:
        raise CorruptRecordError(f"record ends inside or with a bad varint: {exc}") from None


def _decode_records(section: memoryview, record_count: int) -> Iterator[Record]:
    end = len(section)
    position = 0
    for _ in range(record_count):
        start = position
        length, position = read_varint(section, position)
        record_end = position + length
        if length < 0 or record_end > end:
            raise CorruptRecordError("record overruns its batch")
        position += 1  # attributes, unused
        timestamp_delta, position = read_varint(section, position)
        offset_delta, position = read_varint(section, position)
        key_length, position = read_varint(section, position)
        key = None if key_length < 0 else bytes(section[position : position + key_length])
        position += max(key_length, 0)
        value_length, position = read_varint(section, position)
        value = None if value_length < 0 else bytes(section[position : position + value_length])
        if position + max(value_length, 0) > record_end:
            raise CorruptRecordError("record fields overrun the record length")
        position = record_end
        yield Record(offset_delta, timestamp_delta, key, value, section[start:record_end])
    if position != end:
        raise CorruptRecordError(f"batch holds more bytes than its {record_count} records")


def record_timestamp(header: BatchHeader, record: Record) -> int:
    """A record's timestamp: the batch's maxTimestamp under LogAppendTime, else base + delta."""
    if header.is_log_append_time:
        return header.max_timestamp
    return header.base_timestamp + record.timestamp_delta


def build_filtered_batch(header: BatchHeader, records: list[Record]) -> bytes:
    """A new uncompressed batch holding `records` (a non-empty subset of `header`'s batch) at their
    original offsets: same baseOffset, baseTimestamp, producer fields and leader epoch, so each record's
    encoding is copied verbatim (Kafka `MemoryRecords.filterTo` keeps the base offset likewise).
    """
    body = b"".join(record.raw for record in records)
    attributes = (header.attributes & ~CODEC_MASK) & 0xFFFF
    if header.is_log_append_time:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(header.base_timestamp + record.timestamp_delta for record in records)
    batch = bytearray(HEADER_SIZE + len(body))
    HEADER.pack_into(
        batch, 0, header.base_offset, len(batch) - LOG_OVERHEAD, header.partition_leader_epoch, MAGIC, 0,
        attributes, records[-1].offset_delta, header.base_timestamp, max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, len(records),
    )
    batch[HEADER_SIZE:] = body
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
    return bytes(batch)
