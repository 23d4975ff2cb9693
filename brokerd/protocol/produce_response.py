"""Produce responses (v0-11), laid out by hand: every acks 1/all produce is answered with one, so building
kio's entities and serializing them (~0.2-0.5 ms a response, on the acks=all latency path and in the CPU
per record) is replaced by packing the fields. Layout, with the version that adds each field (Kafka's
ProduceResponse.json; kio's schemas are the test oracle, `tests/brokerd/protocol/test_produce_response.py`)::

    [v9+: response header tag section (0)]
    responses ARRAY:
      name STRING | partition_responses ARRAY:
        index i32 | error_code i16 | base_offset i64 | [v2+ log_append_time_ms i64] [v5+ log_start_offset i64]
        [v8+ record_errors ARRAY {batch_index i32, batch_index_error_message STRING? [v9+ tags]},
             error_message STRING?]
        [v9+ tags: v10+ 0 current_leader {leader_id i32, leader_epoch i32, tags}]
      [v9+ tags]
    [v1+ throttle_time_ms i32]
    [v9+ tags: v10+ 0 node_endpoints ARRAY {node_id i32, host STRING, port i32, rack STRING?, tags}]

v9+ is flexible: ARRAY is an unsigned varint count + 1, STRING an unsigned varint length + 1 (0: null);
before v9 an int32 count, an int16 length (-1: null). A field a version lacks is not written: the answer is
the same for every version, as the handler decides it.
"""

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from brokerd.protocol.layout import (
    CURRENT_LEADER,
    I32,
    I64,
    NO_TAGS,
    NodeEndpoint,
    array_length,
    node_endpoints,
    nullable_string,
    string,
)
from brokerd.protocol.layout import tags as tagged

FLEXIBLE_VERSION = 9
CURRENT_LEADER_VERSION = 10
_PARTITION_HEAD = struct.Struct(">ihq")
_CURRENT_LEADER_TAG = 0
_NODE_ENDPOINTS_TAG = 0
_NO_THROTTLE = I32.pack(0)


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One partition of a Produce response, as the handler decided it."""

    index: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    """-1 unless the topic stamps LogAppendTime."""
    log_start_offset: int = -1
    record_errors: tuple[tuple[int, str | None], ...] = ()
    """(batch index, message) of the records that broke a record-level rule (v8+)."""
    error_message: str | None = None
    """v8+."""
    current_leader: tuple[int, int] | None = None
    """(leader id, leader epoch) on NOT_LEADER_OR_FOLLOWER (v10+)."""


def encode_produce_response(version: int, topics: Sequence[tuple[str, Sequence[PartitionResult]]],
                            endpoints: Sequence[NodeEndpoint] = ()) -> bytes:
    """The response body of `version` (after the correlation id), throttle time 0."""
    flexible = version >= FLEXIBLE_VERSION
    out = bytearray(NO_TAGS if flexible else b"")
    out += array_length(len(topics), flexible)
    for name, partitions in topics:
        out += string(name, flexible)
        out += array_length(len(partitions), flexible)
        for p in partitions:
            out += _PARTITION_HEAD.pack(p.index, p.error_code, p.base_offset)
            if version >= 2:
                out += I64.pack(p.log_append_time_ms)
            if version >= 5:
                out += I64.pack(p.log_start_offset)
            if version >= 8:
                out += array_length(len(p.record_errors), flexible)
                for batch_index, message in p.record_errors:
                    out += I32.pack(batch_index) + nullable_string(message, flexible)
                    if flexible:
                        out += NO_TAGS
                out += nullable_string(p.error_message, flexible)
            if flexible:
                out += (tagged([(_CURRENT_LEADER_TAG, CURRENT_LEADER.pack(*p.current_leader, 0))])
                        if p.current_leader is not None and version >= CURRENT_LEADER_VERSION else NO_TAGS)
        if flexible:
            out += NO_TAGS
    if version >= 1:
        out += _NO_THROTTLE
    if flexible:
        out += (tagged([(_NODE_ENDPOINTS_TAG, node_endpoints(list(endpoints)))])
                if endpoints and version >= CURRENT_LEADER_VERSION else NO_TAGS)
    return bytes(out)
