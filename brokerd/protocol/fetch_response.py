"""Fetch v11 response body layout, decoded by hand so fetched records stay a slice of the frame (the
replica fetcher appends them verbatim, never copying or decoding records). The server side encodes
the same layout in `brokerd.server.handlers.fetch`::

    correlation_id i32 (response header v0)
    throttle_time_ms i32 | error_code i16 | session_id i32 | [topics] i32 count:
      topic string (i16 length) | [partitions] i32 count:
        partition_index i32 | error_code i16 | high_watermark i64 | last_stable_offset i64 |
        log_start_offset i64 | aborted_transactions i32 count (-1 = null; each 2 x i64) |
        preferred_read_replica i32 | records i32 length (-1 = null) + bytes
"""

import struct
from dataclasses import dataclass

from brokerd.protocol.messages import MalformedRequestError

_HEAD = struct.Struct(">iihii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqqqi")
_ABORTED = 16


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: memoryview


@dataclass(frozen=True, slots=True)
class FetchResponseBody:
    correlation_id: int
    error_code: int
    partitions: list[FetchedPartition]


def decode_fetch_response(frame: memoryview) -> FetchResponseBody:
    """`frame` is one response without its size prefix. Raises MalformedRequestError if it does not fit."""
    try:
        correlation_id, _throttle, error, _session, topic_count = _HEAD.unpack_from(frame, 0)
        position = _HEAD.size
        partitions = []
        for _ in range(topic_count):
            (length,) = _I16.unpack_from(frame, position)
            position += 2
            topic = bytes(frame[position : position + length]).decode()
            position += length
            (partition_count,) = _I32.unpack_from(frame, position)
            position += 4
            for _ in range(partition_count):
                index, code, high_watermark, _lso, log_start, aborted = _PARTITION.unpack_from(frame, position)
                position += _PARTITION.size
                if aborted > 0:
                    position += aborted * _ABORTED
                position += 4  # preferred_read_replica
                (size,) = _I32.unpack_from(frame, position)
                position += 4
                size = max(size, 0)
                if position + size > len(frame):
                    raise MalformedRequestError("fetch response records run past the frame")
                partitions.append(FetchedPartition(topic, index, code, high_watermark, log_start,
                                                   frame[position : position + size]))
                position += size
    except struct.error as exc:
        raise MalformedRequestError(f"truncated fetch response: {exc}") from exc
    return FetchResponseBody(correlation_id, error, partitions)
