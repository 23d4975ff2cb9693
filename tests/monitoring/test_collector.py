"""`__consumer_offsets` records into events and storage (monitoring.collector.offsets_topic), with
records made by the broker's own encoders (kafkaspec.consumer_offsets)."""

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from kafkaspec.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    encode_key,
    encode_offset_commit_value,
    encode_value,
)
from monitoring.collector.offsets_topic import (
    GroupDeleted,
    GroupGeneration,
    OffsetCommitted,
    OffsetDeleted,
    decode_event,
    store_events,
)
from monitoring.storage import OffsetStorage

NOW = 1_800_000_000_000


def member(member_id: str, host: str, assignment: dict[str, list[int]]) -> MemberMetadataValue:
    encoded = ConsumerProtocolAssignment(0, sorted(assignment.items()), b"").encode(version=0)
    return MemberMetadataValue(member_id, None, f"client-{member_id}", host, 30_000, 10_000, b"", encoded)


def generation(protocol_type: str = "consumer", *members: MemberMetadataValue) -> bytes:
    return encode_value(GroupMetadataValue(protocol_type, 3, "range", members[0].member_id if members else None,
                                           NOW, tuple(members)))


@pytest.mark.parametrize("version", [0, 1, 3])
def test_commit(version):
    key = encode_key(OffsetCommitKey("g", "orders", 2))
    value = encode_offset_commit_value(OffsetCommitValue(41, "meta", NOW - 5), version)
    assert decode_event(key, value, 17) == OffsetCommitted("g", "orders", 2, 41, 17, NOW - 5)


def test_generation_tombstones_and_other_protocols():
    group_key = encode_key(GroupMetadataKey("g"))
    value = generation("consumer", member("m1", "/10.0.0.1", {"orders": [0, 1]}), member("m2", "/10.0.0.2",
                                                                                        {"orders": [2]}))
    assert decode_event(group_key, value, 1) == GroupGeneration("g", {
        ("orders", 0): ("/10.0.0.1", "client-m1"), ("orders", 1): ("/10.0.0.1", "client-m1"),
        ("orders", 2): ("/10.0.0.2", "client-m2")})
    assert decode_event(group_key, generation("consumer"), 2) == GroupGeneration("g", {})
    assert decode_event(group_key, generation("connect", member("w", "/h", {})), 3) is None
    assert decode_event(group_key, None, 4) == GroupDeleted("g")
    assert decode_event(encode_key(OffsetCommitKey("g", "orders", 0)), None, 5) == OffsetDeleted("g", "orders", 0)


@pytest.mark.parametrize(("key", "value"), [
    (None, b""), (b"\x00\x09\x00\x01g", None), (encode_key(OffsetCommitKey("g", "t", 0)), b"\x00\x07"),
])
def test_undecodable_records_raise(key, value):
    with pytest.raises(SchemaError):
        decode_event(key, value, 0)


def test_store_events():
    storage = OffsetStorage(intervals=3)
    storage.add_heads("orders", [50, 50])
    stored = store_events(storage, [
        OffsetCommitted("g", "orders", 0, 10, 1, NOW), OffsetCommitted("g", "orders", 1, 20, 2, NOW),
        OffsetCommitted("g", "orders", 0, 10, 1, NOW),  # the same record again: dropped
        GroupGeneration("g", {("orders", 1): ("/h", "c")}), OffsetDeleted("g", "orders", 0),
        OffsetCommitted("h", "orders", 0, 5, 3, NOW), GroupDeleted("h"),
    ], NOW)
    assert stored == 3
    inputs = storage.partition_inputs("g")
    assert [(len(p.commits), p.owner) for p in inputs] == [(0, ""), (1, "/h")]
    assert storage.groups() == ["g"]
