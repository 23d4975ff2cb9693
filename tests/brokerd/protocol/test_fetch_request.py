"""The replica fetcher's hand-laid Fetch v11 request (`brokerd.protocol.fetch_request`) against kio, the
oracle: framed with `frame_request`, it is byte-identical to `encode_request` of the same request built
with kio's entities, and the broker's codec decodes it back into that entity."""

import datetime

import pytest
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.fetch_request import REPLICA_FETCH_VERSION, FetchPosition, encode_replica_fetch_request
from brokerd.protocol.messages import encode_request, frame_request, message_codec, parse_request_header

CLIENT_ID = "strom-replica-fetcher-2"

CASES = {
    "no topics": [],
    "one partition": [("orders", [FetchPosition(0, 3, 1_234_567, 0, 1_048_576)])],
    "several topics, throttled, high offsets, a non-ASCII name": [
        ("orders", [FetchPosition(2, 7, 2**40, 2**39, 1_048_576), FetchPosition(0, 0, 0, 0, 512)]),
        ("zahlungseingänge", [FetchPosition(11, 2**31 - 1, 5, 5, 1)]),
        ("__consumer_offsets", [FetchPosition(p, 1, p * 10, 0, 1_048_576) for p in range(50)]),
    ],
}


def kio_request(topics: list[tuple[str, list[FetchPosition]]], session: tuple[int, int] = (0, -1),
                forgotten: tuple[tuple[str, list[int]], ...] = ()) -> FetchRequest:
    return FetchRequest(
        replica_id=BrokerId(2), max_wait=datetime.timedelta(milliseconds=500), min_bytes=i32(1),
        max_bytes=i32(10_485_760), isolation_level=i8(0), session_id=i32(session[0]), session_epoch=i32(session[1]),
        topics=tuple(FetchTopic(topic=TopicName(name), partitions=tuple(
            FetchPartition(partition=i32(p.partition), current_leader_epoch=i32(p.current_leader_epoch),
                           fetch_offset=i64(p.fetch_offset), log_start_offset=i64(p.log_start_offset),
                           partition_max_bytes=i32(p.partition_max_bytes)) for p in positions))
                     for name, positions in topics),
        forgotten_topics_data=tuple(ForgottenTopic(topic=TopicName(name), partitions=tuple(i32(p) for p in indexes))
                                    for name, indexes in forgotten), rack_id="")


@pytest.mark.parametrize("topics", CASES.values(), ids=CASES.keys())
def test_the_hand_laid_request_is_what_kio_encodes_and_decodes(topics):
    body = encode_replica_fetch_request(2, 500, 1, 10_485_760, topics)
    framed = frame_request(ApiKey.FETCH, REPLICA_FETCH_VERSION, 42, CLIENT_ID, body)

    assert framed == encode_request(ApiKey.FETCH, REPLICA_FETCH_VERSION, 42, CLIENT_ID, kio_request(topics))
    codec = message_codec(ApiKey.FETCH, REPLICA_FETCH_VERSION)
    header, offset = parse_request_header(framed[4:], codec.flexible)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        ApiKey.FETCH, REPLICA_FETCH_VERSION, 42, CLIENT_ID)
    assert codec.decode_request(framed[4:], offset) == kio_request(topics)


SESSION_CASES = {
    "opening a session": ((0, 0), [("orders", [FetchPosition(0, 3, 10, 0, 1_048_576)])], ()),
    "incremental, nothing changed": ((1_234_567, 42), [], ()),
    "incremental, one changed, some forgotten": (
        (2**31 - 1, 2**31 - 1), [("orders", [FetchPosition(1, 3, 99, 0, 1_048_576)])],
        (("orders", [0, 7]), ("zahlungseingänge", [2**31 - 1]))),
}


@pytest.mark.parametrize(("session", "topics", "forgotten"), SESSION_CASES.values(), ids=SESSION_CASES.keys())
def test_session_fields_and_forgotten_partitions_are_what_kio_encodes(session, topics, forgotten):
    body = encode_replica_fetch_request(2, 500, 1, 10_485_760, topics, session, forgotten)
    framed = frame_request(ApiKey.FETCH, REPLICA_FETCH_VERSION, 7, CLIENT_ID, body)

    expected = kio_request(topics, session, forgotten)
    assert framed == encode_request(ApiKey.FETCH, REPLICA_FETCH_VERSION, 7, CLIENT_ID, expected)
    codec = message_codec(ApiKey.FETCH, REPLICA_FETCH_VERSION)
    _, offset = parse_request_header(framed[4:], codec.flexible)
    assert codec.decode_request(framed[4:], offset) == expected
