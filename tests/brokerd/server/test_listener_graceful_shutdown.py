"""Graceful shutdown of a real standalone broker (SIGTERM): it stops accepting, answers every request it
had already read — a parked Fetch long poll and the requests pipelined behind it — with complete,
well-formed responses in order (a trailing incomplete frame gets none), then closes the connection and exits
0; the log directory is left clean (clean-shutdown marker, recovery point at the log end) and reopens with
exactly the acknowledged data."""

import signal
import socket
import struct
import time

from kio.schema.list_offsets.v2.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from brokerd.protocol.api_keys import ApiKey
from tests.support.broker import RunningBroker, start_broker
from tests.support.kafka_wire import (
    FETCH_VERSION,
    api_versions_v0,
    batches,
    closed_by_broker,
    connect,
    create_topic,
    decode_response,
    encode_request,
    fetch_request,
    produce_request,
    read_frame,
    record_batch,
    recv_exactly,
)
from tests.support.polling import wait_until

TOPIC = "drain"
FETCH_WAIT_MS = 2500
EXIT_TIMEOUT_S = 15


def produce(correlation_id: int, values: list[bytes]) -> bytes:
    return encode_request(ApiKey.PRODUCE, 7, correlation_id, produce_request(TOPIC, record_batch(values)))


def produce_result(frame: bytes) -> tuple[int, int, int]:
    """(correlation_id, error_code, base_offset) of a one-partition Produce v7 response."""
    correlation_id, response = decode_response(ApiKey.PRODUCE, 7, frame)
    ((topic,),) = [response.responses]
    (partition,) = topic.partition_responses
    return correlation_id, partition.error_code, partition.base_offset


def read_frame_or_eof(sock) -> bytes | None:
    """The next response frame, or None if the broker closed the connection cleanly between frames
    (a close in the middle of a frame raises)."""
    first = sock.recv(1)
    if not first:
        return None
    (size,) = struct.unpack(">i", first + recv_exactly(sock, 3))
    return recv_exactly(sock, size)


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def stored_values(broker: RunningBroker) -> list[bytes]:
    values = []
    with connect(broker) as sock:
        while True:
            sock.sendall(encode_request(ApiKey.FETCH, FETCH_VERSION, 1,
                                        fetch_request(TOPIC, offset=len(values), max_wait_ms=0)))
            _, response = decode_response(ApiKey.FETCH, FETCH_VERSION, read_frame(sock))
            (partition,) = response.responses[0].partitions
            assert partition.error_code == 0
            found = [record for batch in batches(partition.records) for record in batch]
            if not found:
                return values
            values += [record.value for record in found if record.offset >= len(values)]


def assert_clean_log_dir(broker: RunningBroker, log_end_offset: int) -> None:
    assert (broker.log_dir / ".kafka_cleanshutdown").exists(), broker.log_file.read_text()
    checkpoint = (broker.log_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert f"{TOPIC} 0 {log_end_offset}" in checkpoint[2:], checkpoint


def test_sigterm_finishes_a_parked_fetch_and_the_requests_pipelined_behind_it(tmp_path):
    broker = start_broker(tmp_path)
    try:
        with connect(broker) as setup:
            create_topic(setup, TOPIC)
            setup.sendall(produce(1, [b"before-0", b"before-1", b"before-2"]))
            assert produce_result(read_frame(setup)) == (1, 0, 0)

        after = [[b"after-%d-%d" % (i, j) for j in range(i + 1)] for i in range(4)]
        metadata = MetadataRequest(topics=(MetadataRequestTopic(name=TopicName(TOPIC)),),
                                   allow_auto_topic_creation=False)
        latest = ListOffsetsRequest(replica_id=BrokerId(-1), isolation_level=i8(0), topics=(ListOffsetsTopic(
            name=TopicName(TOPIC), partitions=(ListOffsetsPartition(partition_index=i32(0),
                                                                    timestamp=i64(-1)),)),))
        unfinished = api_versions_v0(9)
        pipeline = b"".join([
            api_versions_v0(0),
            encode_request(ApiKey.FETCH, FETCH_VERSION, 1,
                           fetch_request(TOPIC, offset=3, max_wait_ms=FETCH_WAIT_MS, min_bytes=1)),
            *(produce(2 + i, values) for i, values in enumerate(after)),
            encode_request(ApiKey.METADATA, 4, 6, metadata),
            encode_request(ApiKey.LIST_OFFSETS, 2, 7, latest),
            unfinished[: len(unfinished) - 3],  # a frame the broker can never complete
        ])
        assert len(pipeline) < 16_384  # one loopback segment: the broker reads it all at once

        with connect(broker) as client, connect(broker) as idle:
            client.sendall(pipeline)
            # The first answer proves the broker has read the pipeline; the Fetch behind it is now parked
            # (nothing can arrive for it), holding up the requests behind it.
            assert struct.unpack_from(">ih", read_frame(client)) == (0, 0)
            broker.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()

            wait_until(lambda: refuses_connections(broker.port), 2, message="the listener to stop accepting")
            idle.settimeout(EXIT_TIMEOUT_S)
            assert closed_by_broker(idle)

            client.settimeout(FETCH_WAIT_MS / 1000 + EXIT_TIMEOUT_S)
            correlation_id, fetched = decode_response(ApiKey.FETCH, FETCH_VERSION, read_frame(client))
            assert (correlation_id, fetched.error_code) == (1, 0)
            (partition,) = fetched.responses[0].partitions
            assert (partition.error_code, partition.high_watermark, partition.records or b"") == (0, 3, b"")

            expected_base = 3
            for i, values in enumerate(after):
                assert produce_result(read_frame(client)) == (2 + i, 0, expected_base)
                expected_base += len(values)

            correlation_id, described = decode_response(ApiKey.METADATA, 4, read_frame(client))
            assert correlation_id == 6
            assert [(t.name, t.error_code, len(t.partitions)) for t in described.topics] == [(TOPIC, 0, 1)]
            correlation_id, listed = decode_response(ApiKey.LIST_OFFSETS, 2, read_frame(client))
            assert correlation_id == 7
            assert [(p.error_code, p.offset) for p in listed.topics[0].partitions] == [(0, expected_base)]

            assert read_frame_or_eof(client) is None  # nothing for the unfinished frame; closed between frames

        assert broker.process.wait(EXIT_TIMEOUT_S) == 0
        assert time.monotonic() - signalled < EXIT_TIMEOUT_S
        assert_clean_log_dir(broker, expected_base)
        log_text = broker.log_file.read_text()
        assert "Traceback" not in log_text and "ERROR" not in log_text, log_text

        broker = start_broker(tmp_path, port=broker.port)
        assert stored_values(broker) == [b"before-0", b"before-1", b"before-2", *(v for vs in after for v in vs)]
    finally:
        assert broker.stop() == 0


def test_sigterm_during_a_produce_burst_answers_and_keeps_every_request_it_had_read(tmp_path):
    broker = start_broker(tmp_path)
    try:
        with connect(broker) as client:
            create_topic(client, TOPIC)
            burst = [[b"burst-%d-%d" % (i, j) for j in range(5)] for i in range(40)]
            pipeline = b"".join(produce(i, values) for i, values in enumerate(burst))
            assert len(pipeline) < 16_384  # one loopback segment: read at once, so all of it is in flight
            client.sendall(pipeline)
            answers = [produce_result(read_frame(client))]
            broker.process.send_signal(signal.SIGTERM)
            client.settimeout(EXIT_TIMEOUT_S)
            while (frame := read_frame_or_eof(client)) is not None:
                answers.append(produce_result(frame))

        assert answers == [(i, 0, 5 * i) for i in range(len(burst))]  # complete, in order, none dropped
        assert broker.process.wait(EXIT_TIMEOUT_S) == 0
        assert_clean_log_dir(broker, 5 * len(burst))

        broker = start_broker(tmp_path, port=broker.port)
        assert stored_values(broker) == [value for values in burst for value in values]
    finally:
        assert broker.stop() == 0
