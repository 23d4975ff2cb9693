"""Kafka's own `__consumer_offsets` record formats, byte for byte, and Kafka's group → partition mapping.

Every record of `__consumer_offsets` is a key and a value (null for a tombstone). Both start with a
big-endian int16 *version* that also tells the record's kind; the rest is the non-flexible (pre-KIP-482)
encoding of Kafka's JSON definitions (`group-coordinator/src/main/resources/common/message/*.json`):
int16/int32/int64 big-endian, `string` = int16 length + UTF-8 (`nullable string`: length -1 for null),
`bytes` = int32 length + bytes, arrays = int32 count + elements. No checksum (the record batch has one).

Keys (the key version says the kind):

    OffsetCommitKey   version 0 or 1 (written: 1)  group: string, topic: string, partition: int32
    GroupMetadataKey  version 2                    group: string

Values (version after the int16):

    OffsetCommitValue  v0: offset int64, metadata string, commit_timestamp int64
                       v1: v0 + expire_timestamp int64         (written when an expire timestamp is set)
                       v2: as v0
                       v3: offset int64, leader_epoch int32, metadata string, commit_timestamp int64
                                                               (written otherwise, as Kafka 3.x)
    GroupMetadataValue v0: protocol_type string, generation int32, protocol nullable string,
                           leader nullable string, members [member_id string, client_id string,
                           client_host string, session_timeout int32, subscription bytes, assignment bytes]
                       v1: members gain rebalance_timeout int32 after client_host
                       v2: v1 + current_state_timestamp int64 before members
                       v3: members gain group_instance_id nullable string after member_id (written)

Timestamps are milliseconds since the Unix epoch; timeouts are milliseconds. Versions 4+ (flexible,
Kafka 4 tagged fields) are not read: decoding raises `SchemaError`, as for any malformed record.
"""

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
NO_EXPIRE_TIMESTAMP = -1
NO_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class SchemaError(ValueError):
    """A `__consumer_offsets` key or value that is malformed or of a version this module cannot read."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset. `leader_epoch` is -1 when unknown; `expire_timestamp_ms` is -1 unless the client
    asked for a retention time (OffsetCommit v2-v4), which makes it a v1 value with Kafka's old expiry."""

    offset: int
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp_ms: int = NO_EXPIRE_TIMESTAMP


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    """One member as stored: `subscription` is its metadata for the group's selected protocol."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group after a generation was set up (or emptied). `protocol_name` and `leader` are None
    when the group has no members; `current_state_timestamp_ms` is -1 when unknown (values before v2)."""

    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadataValue, ...]


Key = OffsetCommitKey | GroupMetadataKey
Value = OffsetCommitValue | GroupMetadataValue


#
# Encoding
#


def _string(value: str) -> bytes:
    raw = value.encode()
    if len(raw) > 0x7FFF:
        raise SchemaError(f"string of {len(raw)} bytes is longer than Kafka's int16 length allows")
    return _I16.pack(len(raw)) + raw


def _nullable_string(value: str | None) -> bytes:
    return _I16.pack(-1) if value is None else _string(value)


def _bytes(value: bytes) -> bytes:
    return _I32.pack(len(value)) + value


def encode_key(key: Key) -> bytes:
    """The record key, at the version Kafka writes (1 for offsets, 2 for group metadata)."""
    if isinstance(key, OffsetCommitKey):
        return (_I16.pack(OFFSET_COMMIT_KEY_VERSION) + _string(key.group_id) + _string(key.topic)
                + _I32.pack(key.partition))
    return _I16.pack(GROUP_METADATA_KEY_VERSION) + _string(key.group_id)


def offset_commit_value_version(value: OffsetCommitValue) -> int:
    """Kafka 3.x's choice: v1 when an expire timestamp is set (v1 is the only version holding it), else v3."""
    return 1 if value.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP else 3


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """The value at `version` (default: the one Kafka 3.x writes); fields a version lacks are dropped."""
    if version is None:
        version = offset_commit_value_version(value)
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"OffsetCommitValue version {version} is not written here")
    out = [_I16.pack(version), _I64.pack(value.offset)]
    if version >= 3:
        out.append(_I32.pack(value.leader_epoch))
    out += [_string(value.metadata), _I64.pack(value.commit_timestamp_ms)]
    if version == 1:
        out.append(_I64.pack(value.expire_timestamp_ms))
    return b"".join(out)


def encode_group_metadata_value(value: GroupMetadataValue, version: int = 3) -> bytes:
    """The value at `version` (default 3, what Kafka 3.x writes); fields a version lacks are dropped."""
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"GroupMetadataValue version {version} is not written here")
    out = [_I16.pack(version), _string(value.protocol_type), _I32.pack(value.generation_id),
           _nullable_string(value.protocol_name), _nullable_string(value.leader)]
    if version >= 2:
        out.append(_I64.pack(value.current_state_timestamp_ms))
    out.append(_I32.pack(len(value.members)))
    for member in value.members:
        out.append(_string(member.member_id))
        if version >= 3:
            out.append(_nullable_string(member.group_instance_id))
        out += [_string(member.client_id), _string(member.client_host)]
        if version >= 1:
            out.append(_I32.pack(member.rebalance_timeout_ms))
        out += [_I32.pack(member.session_timeout_ms), _bytes(member.subscription), _bytes(member.assignment)]
    return b"".join(out)


def encode_value(value: Value | None) -> bytes | None:
    """The record value Kafka 3.x writes for `value`; None (a tombstone) stays None."""
    if value is None:
        return None
    if isinstance(value, OffsetCommitValue):
        return encode_offset_commit_value(value)
    return encode_group_metadata_value(value)


#
# Decoding
#


class _Reader:
    """Reads Kafka's non-flexible primitives from `data`, raising SchemaError on truncation."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, size: int) -> bytes:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise SchemaError("record truncated")
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        try:
            return self._take(size).decode()
        except UnicodeDecodeError as exc:
            raise SchemaError("string is not UTF-8") from exc

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise SchemaError("null in a non-nullable string")
        return value

    def bytes(self) -> bytes:
        size = self.int32()
        if size < 0:
            raise SchemaError("null in a non-nullable bytes field")
        return self._take(size)

    def array_length(self) -> int:
        size = self.int32()
        if size < 0:
            raise SchemaError("null in a non-nullable array")
        return size

    def finish(self) -> None:
        if self._pos != len(self._data):
            raise SchemaError(f"{len(self._data) - self._pos} unexpected trailing bytes")


def decode_key(data: bytes) -> Key:
    reader = _Reader(data)
    version = reader.int16()
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        key: Key = OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(reader.string())
    else:
        raise SchemaError(f"unknown __consumer_offsets key version {version}")
    reader.finish()
    return key


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    reader = _Reader(data)
    version = reader.int16()
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"unknown OffsetCommitValue version {version}")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else NO_LEADER_EPOCH
    metadata = reader.string()
    commit_timestamp_ms = reader.int64()
    expire_timestamp_ms = reader.int64() if version == 1 else NO_EXPIRE_TIMESTAMP
    reader.finish()
    return OffsetCommitValue(offset, metadata, commit_timestamp_ms, leader_epoch, expire_timestamp_ms)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    reader = _Reader(data)
    version = reader.int16()
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"unknown GroupMetadataValue version {version}")
    protocol_type = reader.string()
    generation_id = reader.int32()
    protocol_name = reader.nullable_string()
    leader = reader.nullable_string()
    current_state_timestamp_ms = reader.int64() if version >= 2 else NO_TIMESTAMP
    members = []
    for _ in range(reader.array_length()):
        member_id = reader.string()
        group_instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout_ms = reader.int32() if version >= 1 else None
        session_timeout_ms = reader.int32()
        # Kafka: a v0 member's rebalance timeout is its session timeout.
        members.append(MemberMetadataValue(
            member_id, group_instance_id, client_id, client_host,
            session_timeout_ms if rebalance_timeout_ms is None else rebalance_timeout_ms,
            session_timeout_ms, reader.bytes(), reader.bytes()))
    reader.finish()
    return GroupMetadataValue(protocol_type, generation_id, protocol_name, leader, current_state_timestamp_ms,
                              tuple(members))


def decode_record(key: bytes, value: bytes | None) -> tuple[Key, Value | None]:
    """A `__consumer_offsets` record as (key, value); the value is None for a tombstone."""
    decoded_key = decode_key(key)
    if value is None:
        return decoded_key, None
    if isinstance(decoded_key, OffsetCommitKey):
        return decoded_key, decode_offset_commit_value(value)
    return decoded_key, decode_group_metadata_value(value)


#
# Partitioning
#


def java_string_hash(value: str) -> int:
    """Java's `String.hashCode()`: s[0]*31^(n-1) + … + s[n-1] over UTF-16 code units, as a signed int32."""
    units = value.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition of a group: `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`,
    where Kafka's `Utils.abs` is `n & 0x7fffffff` (so Integer.MIN_VALUE maps to 0)."""
    return (java_string_hash(group_id) & 0x7FFFFFFF) % num_partitions
