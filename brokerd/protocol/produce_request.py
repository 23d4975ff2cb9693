"""Produce requests (v0-11), read by hand: every produce is decoded on the acks=all latency path, and kio's
generic reader (its entities, phantom types and the length pre-check `bounds` needs before it) took most of
a small request's decode time. Only the fields the handler uses are read; each partition's records are
copied out of the frame once, verbatim, as a bytearray (what storage appends in place). Layout (Kafka's
ProduceRequest.json; kio's schemas are the test oracle, `tests/brokerd/protocol/test_produce_request.py`)::

    [v3+ transactional_id STRING?] acks i16 | timeout_ms i32 |
    topic_data ARRAY:
      name STRING | partition_data ARRAY:
        index i32 | records BYTES? [v9+ tags]
      [v9+ tags]
    [v9+ tags]

v9+ is flexible: ARRAY is an unsigned varint count + 1, STRING/BYTES an unsigned varint length + 1 (0: null);
before v9 an int32 count (-1: null), an int16 string length, an int32 bytes length (-1: null). Tagged fields
are skipped, as Kafka does (Produce defines none up to v11). Every length and count is checked against the
frame before it is used, so a lying count fails on the first element that is not there, never allocates.
"""

import struct
from typing import NamedTuple

from brokerd.protocol.bounds import skip_tagged_fields
from brokerd.protocol.errors import MalformedRequestError
from brokerd.varints import VarintError, read_uvarint

FLEXIBLE_VERSION = 9
TRANSACTIONAL_ID_VERSION = 3
_ACKS_TIMEOUT = struct.Struct(">hi")
_CLASSIC_HEAD = struct.Struct(">hii")
"""acks, timeout_ms, the topic count."""
_PARTITION_HEAD = struct.Struct(">ii")
"""A partition's index and its records' length (classic)."""
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_new = tuple.__new__
"""Builds a NamedTuple from its fields without its keyword-handling __new__ (half the cost, per partition)."""


class PartitionData(NamedTuple):
    index: int
    records: bytearray | None


class TopicData(NamedTuple):
    name: str
    partition_data: tuple[PartitionData, ...]


class ProduceRequest(NamedTuple):
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: tuple[TopicData, ...]


def decode_produce_request(frame: bytes, offset: int, version: int) -> ProduceRequest:
    """The Produce request body of `version` at `offset` of `frame` (to its end). Raises MalformedRequestError
    for bytes that are not such a body (truncated, lengths past the end, bad UTF-8, bytes left over)."""
    try:
        request, end = (_read_flexible if version >= FLEXIBLE_VERSION else _read_classic)(frame, offset, version)
    except (struct.error, VarintError, UnicodeDecodeError, IndexError) as exc:
        raise MalformedRequestError(f"cannot decode ProduceRequest v{version}: {exc}") from None
    if end != len(frame):
        raise MalformedRequestError(f"ProduceRequest v{version}: {len(frame) - end} bytes after the body")
    return request


def _read_classic(frame: bytes, position: int, version: int) -> tuple[ProduceRequest, int]:
    """v0-8: int16 string lengths, int32 counts and bytes lengths."""
    size = len(frame)
    transactional_id = None
    if version >= TRANSACTIONAL_ID_VERSION:
        length = _I16.unpack_from(frame, position)[0]
        position += 2
        if length >= 0:
            transactional_id = frame[position:_end(position, length, size)].decode()
            position += length
    acks, timeout_ms, count = _CLASSIC_HEAD.unpack_from(frame, position)
    position += _CLASSIC_HEAD.size
    view = memoryview(frame)
    topics = []
    for _ in range(_checked_count(count)):
        length = _I16.unpack_from(frame, position)[0]
        if length < 0:
            raise MalformedRequestError("a null topic name")
        position += 2
        name = frame[position:_end(position, length, size)].decode()
        position += length
        count = _I32.unpack_from(frame, position)[0]
        position += 4
        partitions = []
        for _ in range(_checked_count(count)):
            index, length = _PARTITION_HEAD.unpack_from(frame, position)
            position += _PARTITION_HEAD.size
            records = None
            if length >= 0:
                records = bytearray(view[position:_end(position, length, size)])
                position += length
            partitions.append(_new(PartitionData, (index, records)))
        topics.append(_new(TopicData, (name, tuple(partitions))))
    return ProduceRequest(transactional_id, acks, timeout_ms, tuple(topics)), position


def _read_flexible(frame: bytes, position: int, version: int) -> tuple[ProduceRequest, int]:
    """v9+: compact lengths and counts (unsigned varint + 1), tag sections."""
    size = len(frame)
    transactional_id = None
    length, position = _uvarint(frame, position)
    if length:
        transactional_id = frame[position:_end(position, length - 1, size)].decode()
        position += length - 1
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, position)
    position += _ACKS_TIMEOUT.size
    view = memoryview(frame)
    topics = []
    count, position = _uvarint(frame, position)
    for _ in range(_checked_count(count - 1)):
        length, position = _uvarint(frame, position)
        if not length:
            raise MalformedRequestError("a null topic name")
        name = frame[position:_end(position, length - 1, size)].decode()
        position += length - 1
        count, position = _uvarint(frame, position)
        partitions = []
        for _ in range(_checked_count(count - 1)):
            index = _I32.unpack_from(frame, position)[0]
            length, position = _uvarint(frame, position + 4)
            records = None
            if length:
                records = bytearray(view[position:_end(position, length - 1, size)])
                position += length - 1
            partitions.append(_new(PartitionData, (index, records)))
            position = skip_tagged_fields(frame, position)
        topics.append(_new(TopicData, (name, tuple(partitions))))
        position = skip_tagged_fields(frame, position)
    return ProduceRequest(transactional_id, acks, timeout_ms, tuple(topics)), skip_tagged_fields(frame, position)


def _uvarint(frame: bytes, position: int) -> tuple[int, int]:
    byte = frame[position]
    if byte < 0x80:  # almost every length and count
        return byte, position + 1
    return read_uvarint(frame, position)


def _end(position: int, length: int, size: int) -> int:
    """Where a field of `length` bytes at `position` ends; MalformedRequestError if past the frame's `size`."""
    end = position + length
    if end > size:
        raise MalformedRequestError(f"a field of {length} bytes runs past the end of the frame")
    return end


def _checked_count(count: int) -> int:
    if count < 0:
        raise MalformedRequestError("a null array where Produce has a non-nullable one")
    return count

