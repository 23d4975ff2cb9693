"""Fetch sessions (KIP-227) on a real broker, as a follower uses them: replica Fetch v11 requests laid out by
kio over a socket. A session is opened by a full fetch, then incremental fetches name nothing (or only what
moved) and are answered only with the partitions that have news; forgotten partitions are no longer answered;
wrong epochs and unknown sessions get the top-level session errors; consumers stay sessionless."""

import datetime

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from brokerd.protocol.api_keys import ApiKey
from tests.support.kafka_wire import (
    connect,
    create_topic,
    decode_response,
    encode_request,
    produce_request,
    read_frame,
    record_batch,
)
from tests.support.polling import wait_until

PARTITIONS = 40
FOLLOWER = 2
WAIT_MS = 50


class Wire:
    def __init__(self, broker) -> None:
        self.sock = connect(broker)
        self.correlation_id = 0

    def call(self, api_key: int, version: int, request: object) -> object:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, request))
        correlation_id, response = decode_response(api_key, version, read_frame(self.sock))
        assert correlation_id == self.correlation_id
        return response

    def fetch(self, session: tuple[int, int], offsets: dict[int, int], topic: str, forgotten: tuple[int, ...] = (),
              replica_id: int = FOLLOWER):
        """Fetch v11 in `session` (id, epoch) naming `offsets` (partition -> fetch offset)."""
        topics = (FetchTopic(topic=TopicName(topic), partitions=tuple(
            FetchPartition(partition=i32(p), current_leader_epoch=i32(-1), fetch_offset=i64(offset),
                           log_start_offset=i64(-1), partition_max_bytes=i32(1 << 20))
            for p, offset in offsets.items())),) if offsets else ()
        return self.call(ApiKey.FETCH, 11, FetchRequest(
            replica_id=BrokerId(replica_id), max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=WAIT_MS)),
            min_bytes=i32(1), session_id=i32(session[0]), session_epoch=i32(session[1]), topics=topics,
            forgotten_topics_data=(ForgottenTopic(topic=TopicName(topic), partitions=tuple(i32(p) for p in forgotten)),)
            if forgotten else ()))

    def produce(self, topic: str, partition: int, count: int = 3) -> int:
        response = self.call(ApiKey.PRODUCE, 7, produce_request(topic, record_batch([b"v"] * count), partition))
        return response.responses[0].partition_responses[0].error_code


def answered(response) -> dict[int, tuple[int, int]]:
    """partition -> (high watermark, bytes of records) of every partition the response names."""
    assert response.error_code == ErrorCode.none
    return {int(p.partition_index): (int(p.high_watermark), len(p.records or b""))
            for t in response.responses for p in t.partitions}


@pytest.fixture
def wire(broker, topic_name):
    connection = Wire(broker)
    create_topic(connection.sock, topic_name, PARTITIONS)
    wait_until(lambda: connection.produce(topic_name, 5) == ErrorCode.none, message="the new topic to be led")
    yield connection
    connection.sock.close()


def test_an_idle_session_answers_nothing_and_then_only_the_partition_that_got_records(wire, topic_name):
    opened = wire.fetch((0, 0), dict.fromkeys(range(PARTITIONS), 0), topic_name)
    session_id = opened.session_id
    assert session_id != 0
    first = answered(opened)
    assert sorted(first) == list(range(PARTITIONS)) and first[5][1] > 0 and first[5][0] == 3

    # The follower caught p5 up: it names only p5, at its new end; nothing has news.
    assert answered(wire.fetch((session_id, 1), {5: 3}, topic_name)) == {}
    assert answered(wire.fetch((session_id, 2), {}, topic_name)) == {}

    assert wire.produce(topic_name, 17, count=2) == ErrorCode.none
    news = answered(wire.fetch((session_id, 3), {}, topic_name))
    assert list(news) == [17] and news[17][0] == 2 and news[17][1] > 0

    # Forgotten: new records there are no longer answered.
    assert answered(wire.fetch((session_id, 4), {}, topic_name, forgotten=(17,))) == {}
    assert wire.produce(topic_name, 17) == ErrorCode.none
    assert answered(wire.fetch((session_id, 5), {}, topic_name)) == {}
    # Named again (added back to the session), it is answered from the offset given.
    assert list(answered(wire.fetch((session_id, 6), {17: 2}, topic_name))) == [17]


def test_session_errors_and_closing(wire, topic_name):
    session_id = wire.fetch((0, 0), {0: 0, 5: 3}, topic_name).session_id

    wrong_epoch = wire.fetch((session_id, 7), {}, topic_name)
    assert (wrong_epoch.error_code, wrong_epoch.responses) == (ErrorCode.invalid_fetch_session_epoch, ())
    assert answered(wire.fetch((session_id, 1), {}, topic_name)) == {}  # the session is still there
    unknown = wire.fetch((session_id + 1, 1), {}, topic_name)
    assert unknown.error_code == ErrorCode.fetch_session_id_not_found
    other_replica = wire.fetch((session_id, 2), {}, topic_name, replica_id=FOLLOWER + 1)
    assert other_replica.error_code == ErrorCode.fetch_session_id_not_found

    closed = wire.fetch((session_id, -1), {0: 0}, topic_name)  # epoch -1: close, and fetch sessionless
    assert closed.session_id == 0 and list(answered(closed)) == [0]
    assert wire.fetch((session_id, 2), {}, topic_name).error_code == ErrorCode.fetch_session_id_not_found


def test_a_consumer_asking_for_a_session_is_answered_sessionless(wire, topic_name):
    response = wire.fetch((0, 0), {5: 0, 6: 0}, topic_name, replica_id=-1)
    assert response.session_id == 0 and sorted(answered(response)) == [5, 6]
