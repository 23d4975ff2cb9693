"""Consumer-protocol subscriptions and assignments (kafkaspec.consumer_protocol) against kafka-python's own
encoder."""

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kafkaspec.consumer_protocol import AssignmentError, decode_assignment, subscription_topics


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("topics", [[], ["orders"], ["orders", "ünïcode"]])
def test_subscription_topics_of_what_kafka_python_encodes(topics, version):
    encoded = ConsumerProtocolSubscription(version, topics, b"user-data").encode(version=version)
    assert subscription_topics(encoded) == topics


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x00", bytes.fromhex("0000 00000001 0005 74")])
def test_a_subscription_that_does_not_parse_has_no_topics(data):
    assert subscription_topics(data) is None


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@pytest.mark.parametrize("assignment", [
    {},
    {"orders": (0, 2, 5)},
    {"orders": (1,), "payments": (), "ünïcode": (7, 3)},
])
def test_decodes_what_kafka_python_encodes(assignment, version):
    items = [(topic, list(partitions)) for topic, partitions in sorted(assignment.items())]
    encoded = ConsumerProtocolAssignment(version, items, b"user-data").encode(version=version)
    assert decode_assignment(encoded) == assignment


def test_golden_bytes():
    data = bytes.fromhex("0003 00000001 0001 74 00000002 00000000 00000004 ffffffff")
    assert decode_assignment(data) == {"t": (0, 4)}


def test_empty_member_assignment():
    assert decode_assignment(b"") == {}


@pytest.mark.parametrize("data", [b"\x00", bytes.fromhex("0000 00000001 0005 74"), bytes.fromhex("0000 ffffffff"),
                                  bytes.fromhex("0000 00000001 0001 74 00000009 00000000")])
def test_malformed(data):
    with pytest.raises(AssignmentError):
        decode_assignment(data)
