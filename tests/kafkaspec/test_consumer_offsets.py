"""`__consumer_offsets` formats: golden bytes derived by hand from Kafka's JSON definitions, round trips
(hypothesis), and an independent oracle: kafka-python's generic JSON-schema codec (`ApiData`, which writes
the same int16 version prefix) fed with a transcription of Kafka's field lists."""

import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.api_data import ApiData, JsonSchemaData
from kafka.protocol.schemas import StructField

from kafkaspec.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_record,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
    encode_value,
    java_string_hash,
    partition_for,
)

COMMIT_TS = 1_700_000_000_000  # 0x0000018BCFE56800


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


#
# Golden bytes (each spelled out field by field)
#

GOLDEN = [
    pytest.param(
        encode_key(OffsetCommitKey("g", "t", 3)),
        h("0001" "0001 67" "0001 74" "00000003"),
        id="offset-key: version 1 | group 'g' | topic 't' | partition 3",
    ),
    pytest.param(
        encode_key(GroupMetadataKey("g")),
        h("0002" "0001 67"),
        id="group-key: version 2 | group 'g'",
    ),
    pytest.param(
        encode_value(OffsetCommitValue(42, "", COMMIT_TS, leader_epoch=5)),
        h("0003" "000000000000002a" "00000005" "0000" "0000018bcfe56800"),
        id="offset-value v3: offset 42 | leader epoch 5 | metadata '' | commit timestamp",
    ),
    pytest.param(
        encode_value(OffsetCommitValue(42, "m", COMMIT_TS, expire_timestamp_ms=COMMIT_TS + 1)),
        h("0001" "000000000000002a" "0001 6d" "0000018bcfe56800" "0000018bcfe56801"),
        id="offset-value v1 (expire timestamp set): offset | metadata 'm' | commit ts | expire ts",
    ),
    pytest.param(
        encode_value(GroupMetadataValue("consumer", 1, "range", "m", 5, (
            MemberMetadataValue("m", None, "c", "/h", 1, 2, b"s", b"a"),))),
        h("0003" "0008 636f6e73756d6572" "00000001" "0005 72616e6765" "0001 6d" "0000000000000005"
          "00000001"  # one member:
          "0001 6d" "ffff" "0001 63" "0002 2f68" "00000001" "00000002" "00000001 73" "00000001 61"),
        id="group-value v3: type | generation | protocol | leader | state ts | [member|null instance|client|"
           "host|rebalance|session|subscription|assignment]",
    ),
    pytest.param(
        encode_value(GroupMetadataValue("consumer", 7, None, None, COMMIT_TS, ())),
        h("0003" "0008 636f6e73756d6572" "00000007" "ffff" "ffff" "0000018bcfe56800" "00000000"),
        id="group-value v3 of an empty group: null protocol and leader, no members",
    ),
]


@pytest.mark.parametrize(("encoded", "expected"), GOLDEN)
def test_golden_bytes(encoded, expected):
    assert encoded == expected


def test_tombstones_decode_to_none():
    key = encode_key(OffsetCommitKey("g", "t", 0))
    assert decode_record(key, None) == (OffsetCommitKey("g", "t", 0), None)
    assert decode_record(encode_key(GroupMetadataKey("g")), None) == (GroupMetadataKey("g"), None)
    assert encode_value(None) is None


def test_old_versions_decode():
    # Key version 0 (pre-0.10 brokers) has the same layout as version 1.
    assert decode_key(h("0000" "0001 67" "0001 74" "00000009")) == OffsetCommitKey("g", "t", 9)
    # OffsetCommitValue v0 and v2: offset | metadata | commit timestamp; no leader epoch.
    for version in ("0000", "0002"):
        value = decode_offset_commit_value(h(version + "0000000000000007" "0000" "0000018bcfe56800"))
        assert value == OffsetCommitValue(7, "", COMMIT_TS)
    # GroupMetadataValue v0: no rebalance timeout (Kafka uses the session timeout), no state timestamp.
    v0 = decode_group_metadata_value(h(
        "0000" "0008 636f6e73756d6572" "00000002" "0005 72616e6765" "0001 6d" "00000001"
        "0001 6d" "0001 63" "0002 2f68" "00002710" "00000000" "00000000"))
    assert v0.current_state_timestamp_ms == -1
    assert v0.members == (MemberMetadataValue("m", None, "c", "/h", 10_000, 10_000, b"", b""),)


@pytest.mark.parametrize(("data", "decoder"), [
    pytest.param(h("0003"), decode_key, id="unknown key version 3 (a KIP-848 record)"),
    pytest.param(h("0002 0005 67"), decode_key, id="truncated string"),
    pytest.param(h("0002 0001 67 00"), decode_key, id="trailing byte"),
    pytest.param(h("0004") + bytes(30), decode_offset_commit_value, id="flexible value v4 unsupported"),
    pytest.param(h("0003 ffff"), decode_group_metadata_value, id="null protocol type"),
])
def test_malformed_records_raise(data, decoder):
    with pytest.raises(SchemaError):
        decoder(data)


#
# Partitioning: Java's String.hashCode and Utils.abs
#

@pytest.mark.parametrize(("group_id", "java_hash"), [
    pytest.param("", 0, id="empty"),
    pytest.param("hello", 99162322, id="ascii"),
    pytest.param("Aa", 2112, id="collides-with-BB-1"),
    pytest.param("BB", 2112, id="collides-with-Aa-2"),
    pytest.param("polygenelubricants", -(2**31), id="hash is Integer.MIN_VALUE"),
    # U+1F600 is the UTF-16 pair D83D DE00: 0xD83D * 31 + 0xDE00.
    pytest.param("\U0001F600", 0xD83D * 31 + 0xDE00, id="surrogate pair"),
])
def test_java_string_hash(group_id, java_hash):
    assert java_string_hash(group_id) == java_hash


def test_partition_for_uses_kafka_abs():
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0, not an exception
    assert partition_for("x" * 7, 50) == (java_string_hash("x" * 7) & 0x7FFFFFFF) % 50


#
# Round trips and the kafka-python oracle
#

def _oracle(name: str, fields: list) -> type:
    """A kafka-python `ApiData` class for a non-flexible JSON definition (versions 0-3) given as a dict."""
    schema = {"type": "data", "name": name, "validVersions": "0-3", "flexibleVersions": "none", "fields": fields}
    cls = JsonSchemaData(schema["name"], (ApiData,), {"_json": schema, "_struct": StructField(schema)}, init=False)
    cls._struct.set_data_class(weakref.proxy(cls))
    return cls


# Field lists of Kafka's OffsetCommitValue.json and GroupMetadataValue.json, non-flexible versions 0-3.
OffsetCommitValueOracle = _oracle("OffsetCommitValue", [
    {"name": "offset", "type": "int64", "versions": "0+"},
    {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1},
    {"name": "metadata", "type": "string", "versions": "0+"},
    {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
    {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1},
])
GroupMetadataValueOracle = _oracle("GroupMetadataValue", [
    {"name": "protocolType", "versions": "0+", "type": "string"},
    {"name": "generation", "versions": "0+", "type": "int32"},
    {"name": "protocol", "versions": "0+", "type": "string", "nullableVersions": "0+"},
    {"name": "leader", "versions": "0+", "type": "string", "nullableVersions": "0+"},
    {"name": "currentStateTimestamp", "versions": "2+", "type": "int64", "default": -1},
    {"name": "members", "versions": "0+", "type": "[]MemberMetadata", "fields": [
        {"name": "memberId", "versions": "0+", "type": "string"},
        {"name": "groupInstanceId", "versions": "3+", "type": "string", "default": "null", "nullableVersions": "3+"},
        {"name": "clientId", "versions": "0+", "type": "string"},
        {"name": "clientHost", "versions": "0+", "type": "string"},
        {"name": "rebalanceTimeout", "versions": "1+", "type": "int32"},
        {"name": "sessionTimeout", "versions": "0+", "type": "int32"},
        {"name": "subscription", "versions": "0+", "type": "bytes"},
        {"name": "assignment", "versions": "0+", "type": "bytes"},
    ]},
])

names = st.text(max_size=20)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
offset_values = st.builds(OffsetCommitValue, int64s, names, int64s, int32s, int64s)
members = st.builds(MemberMetadataValue, names, st.none() | names, names, names, int32s, int32s,
                    st.binary(max_size=20), st.binary(max_size=20))
group_values = st.builds(GroupMetadataValue, names, int32s, st.none() | names, st.none() | names, int64s,
                         st.lists(members, max_size=4).map(tuple))


@given(st.builds(OffsetCommitKey, names, names, int32s) | st.builds(GroupMetadataKey, names))
def test_key_round_trip(key):
    assert decode_key(encode_key(key)) == key


@given(offset_values)
def test_offset_value_round_trip_and_oracle(value):
    encoded = encode_value(value)
    decoded = decode_offset_commit_value(encoded)
    assert decoded.offset == value.offset and decoded.metadata == value.metadata
    assert decoded.commit_timestamp_ms == value.commit_timestamp_ms
    if value.expire_timestamp_ms == -1:  # v3 keeps the leader epoch
        assert decoded == value
    else:  # v1 keeps the expire timestamp, not the leader epoch
        assert decoded == OffsetCommitValue(value.offset, value.metadata, value.commit_timestamp_ms,
                                            -1, value.expire_timestamp_ms)
    for version in range(4):
        ours = encode_offset_commit_value(value, version)
        theirs = OffsetCommitValueOracle.decode(ours)
        assert (theirs.offset, theirs.metadata, theirs.commit_timestamp) == (
            value.offset, value.metadata, value.commit_timestamp_ms)
        assert OffsetCommitValueOracle.decode(ours).encode(version=version) == ours


@given(group_values)
def test_group_value_round_trip_and_oracle(value):
    assert decode_group_metadata_value(encode_value(value)) == value
    for version in range(4):
        oracle = GroupMetadataValueOracle(
            protocol_type=value.protocol_type, generation=value.generation_id, protocol=value.protocol_name,
            leader=value.leader, current_state_timestamp=value.current_state_timestamp_ms,
            members=[GroupMetadataValueOracle.MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms, subscription=m.subscription, assignment=m.assignment)
                for m in value.members])
        assert encode_group_metadata_value(value, version) == oracle.encode(version=version)
