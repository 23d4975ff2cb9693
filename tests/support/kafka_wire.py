"""A minimal blocking Kafka wire client for tests that need to control exactly which bytes reach the broker
and when: requests encoded and responses decoded with the broker's own codec (`brokerd.protocol.messages`,
i.e. kio's schemas), record batches built with kafka-python's v2 batch builder.

    sock = connect(broker)
    sock.sendall(encode_request(ApiKey.METADATA, 4, 1, MetadataRequest(...)))
    correlation_id, response = decode_response(ApiKey.METADATA, 4, read_frame(sock))
"""

import datetime
import io
import socket
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kio.schema.create_topics.v3.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.produce.v7.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i32Timedelta, i64

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.messages import message_codec

CLIENT_ID = b"strom-tests"


def connect(broker, timeout_s: float = 10.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", broker.port), timeout=timeout_s)


def encode_request(api_key: int, version: int, correlation_id: int, request: object,
                   client_id: bytes = CLIENT_ID) -> bytes:
    """Size prefix + request header (v1, or v2 with an empty tag section when flexible) + kio-encoded body."""
    codec = message_codec(api_key, version)
    assert codec is not None, (api_key, version)
    body = io.BytesIO()
    entity_writer(codec.request_type)(body, request)
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    payload = header + (b"\0" if codec.flexible else b"") + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


def api_versions_v0(correlation_id: int, client_id: bytes = CLIENT_ID) -> bytes:
    """An ApiVersions v0 request frame (empty body), with an arbitrary-length client id."""
    payload = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(payload)) + payload


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> bytes:
    """One whole response frame, without its size prefix. Raises ConnectionError on EOF (even mid-frame)."""
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    return recv_exactly(sock, size)


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, object]:
    """(correlation_id, kio response entity); asserts that the body is consumed exactly."""
    codec = message_codec(api_key, version)
    assert codec is not None, (api_key, version)
    (correlation_id,) = struct.unpack_from(">i", frame)
    offset = 4 + (1 if codec.flexible and api_key != ApiKey.API_VERSIONS else 0)
    response, size = entity_reader(codec.response_type)(frame, offset)
    assert offset + size == len(frame), f"{len(frame) - offset - size} trailing bytes after the response body"
    return correlation_id, response


def closed_by_broker(sock: socket.socket) -> bool:
    """Block (up to the socket timeout) until the broker closes the connection; False if it sends data."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def record_batch(values: list[bytes | None], compression: int = 0, timestamp_ms: int = 1_700_000_000_000,
                 key_prefix: bytes = b"k") -> bytes:
    """One v2 record batch (base offset 0, not idempotent) holding `values` with keys `key_prefix + i`."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp_ms + i, key=key_prefix + b"%d" % i, value=value, headers=[])
    return bytes(builder.build())


def batches(records: bytes | None) -> list:
    """The record batches in a Fetch response's `records` bytes (kafka-python's parser)."""
    memory = MemoryRecords(bytes(records or b""))
    found = []
    while (batch := memory.next_batch()) is not None:
        found.append(batch)
    return found


FETCH_VERSION = 11


def fetch_request(topic: str, partition: int = 0, offset: int = 0, max_wait_ms: int = 500, min_bytes: int = 1,
                  partition_max_bytes: int = 1 << 20) -> FetchRequest:
    """A Fetch v11 request (the version Strom implements) for one partition."""
    return FetchRequest(
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)), min_bytes=i32(min_bytes),
        topics=(FetchTopic(topic=TopicName(topic), partitions=(FetchPartition(
            partition=i32(partition), fetch_offset=i64(offset), partition_max_bytes=i32(partition_max_bytes)),)),),
        forgotten_topics_data=())


def create_topic_request(name: str, partitions: int = 1,
                         configs: dict[str, str] | None = None) -> CreateTopicsRequest:
    """CreateTopics v3 (Strom's implemented version) for one topic, replication factor 1."""
    return CreateTopicsRequest(
        topics=(CreatableTopic(name=TopicName(name), num_partitions=i32(partitions), replication_factor=i16(1),
                               assignments=(), configs=tuple(CreatableTopicConfig(name=k, value=v)
                                                             for k, v in (configs or {}).items())),),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)))


def produce_request(topic: str, batch: bytes, partition: int = 0, acks: int = 1) -> ProduceRequest:
    """Produce v7 (Strom's implemented version) of one batch to one partition."""
    return ProduceRequest(
        acks=i16(acks), timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        topic_data=(TopicProduceData(name=TopicName(topic), partition_data=(
            PartitionProduceData(index=i32(partition), records=batch),)),))


def create_topic(sock: socket.socket, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                 correlation_id: int = 1_000_000) -> None:
    sock.sendall(encode_request(ApiKey.CREATE_TOPICS, 3, correlation_id,
                                create_topic_request(name, partitions, configs)))
    _, response = decode_response(ApiKey.CREATE_TOPICS, 3, read_frame(sock))
    assert [t.error_code for t in response.topics] == [0], response
