"""Primitives shared by the response bodies laid out by hand (`fetch_response`, `produce_response`): Kafka's
STRING, nullable STRING, ARRAY length and tagged-field section, classic or flexible (compact: unsigned varint
length + 1, 0 for null), and the KIP-951 node endpoint both responses carry (v16+ Fetch, v10+ Produce)."""

import struct
from dataclasses import dataclass

from brokerd.varints import uvarint

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
NO_TAGS = b"\0"
"""An empty tagged-field section."""
CURRENT_LEADER = struct.Struct(">iib")
"""KIP-951's LeaderIdAndEpoch tagged value: leader id, leader epoch, an empty tagged-field section."""
_NULL_STRING = I16.pack(-1)


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None


def string(value: str, flexible: bool) -> bytes:
    data = value.encode()
    return (uvarint(len(data) + 1) if flexible else I16.pack(len(data))) + data


def nullable_string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\0" if flexible else _NULL_STRING
    return string(value, flexible)


def array_length(count: int, flexible: bool) -> bytes:
    return uvarint(count + 1) if flexible else I32.pack(count)


def tags(fields: list[tuple[int, bytes]]) -> bytes:
    """A tagged-field section of (tag, encoded value) pairs, in tag order."""
    if not fields:
        return NO_TAGS
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


def node_endpoints(nodes: list[NodeEndpoint]) -> bytes:
    """The compact NodeEndpoints array (a tagged field's value)."""
    return array_length(len(nodes), True) + b"".join(
        I32.pack(n.node_id) + string(n.host, True) + I32.pack(n.port) + nullable_string(n.rack, True) + NO_TAGS
        for n in nodes)
