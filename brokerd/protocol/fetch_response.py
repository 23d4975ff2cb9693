"""Fetch responses, laid out by hand so that fetched records are never copied through Python buffers.

Encoding (`encode_fetch_response`, the broker's answer, every version 0-17): the fixed fields are
packed with `struct` and each partition's records go out as the chunk the handler gives, a storage file
region the connection `sendfile`s (or, for the legacy versions 0-3, down-converted bytes). Layout, with
the version that adds each field (Kafka's FetchResponse.json; kio's schemas are the test oracle,
`tests/brokerd/protocol/test_fetch_response.py`)::

    [v12+: response header tag section (0)]
    [v1+ throttle_time_ms i32] [v7+ error_code i16, session_id i32] responses ARRAY:
      v0-12 topic STRING | v13+ topic_id UUID;  partitions ARRAY:
        partition_index i32 | error_code i16 | high_watermark i64 | [v4+ last_stable_offset i64]
        [v5+ log_start_offset i64] [v4+ aborted_transactions ARRAY (empty)] [v11+ preferred_read_replica i32]
        records BYTES | [v12+ tags: 0 diverging_epoch {epoch i32, end_offset i64}, 1 current_leader
        {leader_id i32, leader_epoch i32}]
      [v12+ tags (none)]
    [v12+ tags: v16+ 0 node_endpoints ARRAY {node_id i32, host STRING, port i32, rack STRING?}]

v12+ is flexible: ARRAY is an unsigned varint count + 1, STRING/BYTES an unsigned varint length + 1;
before v12 they are an int32 count, an int16/int32 length.

Decoding (`decode_fetch_response`, the replica fetcher's side, v11 only) keeps each partition's records
a slice of the frame, so followers append them verbatim::

    correlation_id i32 (response header v0)
    throttle_time_ms i32 | error_code i16 | session_id i32 | [topics] i32 count:
      topic string (i16 length) | [partitions] i32 count:
        partition_index i32 | error_code i16 | high_watermark i64 | last_stable_offset i64 |
        log_start_offset i64 | aborted_transactions i32 count (-1 = null; each 2 x i64) |
        preferred_read_replica i32 | records i32 length (-1 = null) + bytes
"""

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from brokerd.protocol import layout
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.layout import NodeEndpoint
from brokerd.varints import uvarint

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
    session_id: int
    partitions: list[FetchedPartition]


def decode_fetch_response(frame: memoryview) -> FetchResponseBody:
    """`frame` is one response without its size prefix. Raises MalformedRequestError if it does not fit."""
    try:
        correlation_id, _throttle, error, session_id, topic_count = _HEAD.unpack_from(frame, 0)
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
    return FetchResponseBody(correlation_id, error, session_id, partitions)


# --- encoding --------------------------------------------------------------------------------------

SESSION_VERSION = 7
FLEXIBLE_VERSION = 12
TOPIC_ID_VERSION = 13
NODE_ENDPOINTS_VERSION = 16
NO_PREFERRED_READ_REPLICA = -1
_TOP_V7 = struct.Struct(">ihi")
_PARTITION_HEAD = struct.Struct(">ihq")
_EPOCH_END = struct.Struct(">iqb")
_DIVERGING_EPOCH_TAG, _CURRENT_LEADER_TAG = 0, 1
_NODE_ENDPOINTS_TAG = 0


class SizedChunk(Protocol):
    """What a partition's records may be besides bytes: a byte range of a file (`length` bytes), which the
    connection sends with sendfile (storage's `FileRegion`)."""

    length: int


@dataclass(slots=True)
class PartitionAnswer:
    """One partition of a Fetch response, as the handler decided it."""

    index: int
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | SizedChunk | None = None
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end offset) where the fetcher's last fetched epoch ends on this leader (v12+)."""
    current_leader: tuple[int, int] | None = None
    """(leader id, leader epoch) when this broker does not lead the partition (v12+)."""


@dataclass(slots=True)
class TopicAnswer:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionAnswer] = field(default_factory=list)


def encode_fetch_response(version: int, topics: Sequence[TopicAnswer], node_endpoints: Sequence[NodeEndpoint] = (),
                          error_code: int = 0, session_id: int = 0) -> tuple[list[bytes | SizedChunk], int]:
    """The response body of `version` (after the correlation id) as chunks, and their total size.
    `error_code` and `session_id` (v7+, KIP-227) are the top-level ones: 0 and 0 outside a fetch session."""
    flexible = version >= FLEXIBLE_VERSION
    chunks: list[bytes | SizedChunk] = []
    head = bytearray(b"\0" if flexible else b"")
    if version >= 7:
        head += _TOP_V7.pack(0, error_code, session_id)
    elif version >= 1:
        head += _I32.pack(0)
    head += layout.array_length(len(topics), flexible)
    size = 0
    for topic in topics:
        head += topic.topic_id.bytes if version >= TOPIC_ID_VERSION else layout.string(topic.name, flexible)
        head += layout.array_length(len(topic.partitions), flexible)
        for p in topic.partitions:
            head += _PARTITION_HEAD.pack(p.index, p.error_code, p.high_watermark)
            if version >= 4:
                head += layout.I64.pack(p.last_stable_offset)
                if version >= 5:
                    head += layout.I64.pack(p.log_start_offset)
                head += layout.array_length(0, flexible)
            if version >= 11:
                head += _I32.pack(NO_PREFERRED_READ_REPLICA)
            records = p.records
            length = 0 if records is None else (len(records) if isinstance(records, bytes) else records.length)
            head += uvarint(length + 1) if flexible else _I32.pack(length)
            if length:
                chunks.append(bytes(head))
                chunks.append(records)  # type: ignore[arg-type]
                size += len(head) + length
                head = bytearray()
            if flexible:
                if p.diverging_epoch is None and p.current_leader is None:
                    head += layout.NO_TAGS
                    continue
                tags = []
                if p.diverging_epoch is not None:
                    tags.append((_DIVERGING_EPOCH_TAG, _EPOCH_END.pack(*p.diverging_epoch, 0)))
                if p.current_leader is not None:
                    tags.append((_CURRENT_LEADER_TAG, layout.CURRENT_LEADER.pack(*p.current_leader, 0)))
                head += layout.tags(tags)
        if flexible:
            head += layout.NO_TAGS
    if flexible:
        if version >= NODE_ENDPOINTS_VERSION and node_endpoints:
            head += layout.tags([(_NODE_ENDPOINTS_TAG, layout.node_endpoints(list(node_endpoints)))])
        else:
            head += layout.NO_TAGS
    chunks.append(bytes(head))
    return chunks, size + len(head)
