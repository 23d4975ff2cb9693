"""Kafka's consumer protocol (protocol type "consumer") as stored in a group's metadata: the subscription a
member joined with and the assignment it received (`ConsumerProtocolSubscription`,
`ConsumerProtocolAssignment`, `clients/src/main/resources/common/message/`).

    subscription  version int16 (0-3) | topics int32 count × int16-length UTF-8 string | user_data | ...
    assignment    version int16 (0-3: the same layout for the fields read here)
                  assigned_partitions  int32 count × (topic: int16-length UTF-8 string, partitions: int32
                  count × int32) | user_data nullable bytes (not read)

Only the topics and the assigned partitions are read; trailing fields are ignored, so later versions that
only append fields still decode.
"""

import struct

_HEAD = struct.Struct(">hi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class AssignmentError(ValueError):
    """The bytes are not a consumer-protocol assignment."""


def subscription_topics(metadata: bytes) -> list[str] | None:
    """The topics of a member's subscription (any version: they come first); None if it does not parse (a
    group coordinator then treats the group's subscriptions as unknown)."""
    try:
        _, count = _HEAD.unpack_from(metadata, 0)
        pos = _HEAD.size
        topics = []
        for _ in range(count):
            (size,) = _I16.unpack_from(metadata, pos)
            pos += 2
            if size < 0 or pos + size > len(metadata):
                return None
            topics.append(metadata[pos:pos + size].decode())
            pos += size
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def decode_assignment(data: bytes) -> dict[str, tuple[int, ...]]:
    """Topic → assigned partitions; an empty assignment (b"", as for a member without one) is {}."""
    if not data:
        return {}
    try:
        _, count = _HEAD.unpack_from(data, 0)
        pos = _HEAD.size
        if count < 0:
            raise AssignmentError("null assigned_partitions")
        assigned: dict[str, tuple[int, ...]] = {}
        for _ in range(count):
            (size,) = _I16.unpack_from(data, pos)
            pos += 2
            if size < 0 or pos + size > len(data):
                raise AssignmentError("bad topic name length")
            topic = data[pos:pos + size].decode()
            pos += size
            (partitions,) = _I32.unpack_from(data, pos)
            pos += 4
            if partitions < 0 or pos + 4 * partitions > len(data):
                raise AssignmentError("bad partition count")
            assigned[topic] = struct.unpack_from(f">{partitions}i", data, pos)
            pos += 4 * partitions
        return assigned
    except (struct.error, UnicodeDecodeError) as exc:
        raise AssignmentError(str(exc)) from exc
