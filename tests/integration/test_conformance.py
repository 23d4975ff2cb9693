"""The conformance table: every API × every version Strom advertises, against a real broker.

For each (API, version) of `SUPPORTED_APIS` a request is generated from kio's schema of that version
(`sample_request`: every field gets a value from its name and type, one element per array), sent, and
its response decoded with kio's schema of that version, which must consume it exactly. No error in it
may be UNKNOWN_SERVER_ERROR, and for the APIs in `MUST_SUCCEED` every error code must be NONE. The same
request about a topic that does not exist must be refused the same well-formed way. Then the same
request, malformed (its body cut short, or trailing garbage), must get a well-formed error response
of that version or a closed connection, while another connection keeps being served.

Versions are read from the table, never listed here: an API or version added to the table is covered.
"""

import dataclasses
import datetime
import io
import socket
import typing
import uuid

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import Records

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS
from tests.support.broker import standalone_broker
from tests.support.kafka_wire import (
    api_versions_v0,
    closed_by_broker,
    connect,
    create_topic,
    decode_response,
    encode_request,
    read_frame,
)
from tests.support.polling import wait_until

TOPIC = "conformance"
GROUP = "conformance-group"
TABLE = [(ApiKey(key), version) for key, r in sorted(SUPPORTED_APIS.items())
         for version in range(r.min_version, r.max_version + 1)]
MUST_SUCCEED = {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.OFFSET_COMMIT,
                ApiKey.OFFSET_FETCH, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.INIT_PRODUCER_ID,
                ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS,
                ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DESCRIBE_CLUSTER, ApiKey.DELETE_RECORDS,
                ApiKey.DESCRIBE_LOG_DIRS}
"""APIs whose generated request is valid at every version, so every error code in the answer is NONE."""


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def _records(api_version: int) -> bytes:
    """A Produce payload the version may carry: a legacy message set (v0-v1 magic 0, v2 magic 1), else a v2 batch."""
    if api_version <= 2:
        builder = LegacyRecordBatchBuilder(magic=0 if api_version < 2 else 1, compression_type=0, batch_size=1 << 20)
        builder.append(0, timestamp=1_700_000_000_000 if api_version == 2 else None, key=b"k", value=b"legacy")
        return bytes(builder.build())
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"v2", headers=[])
    return bytes(builder.build())


class Sample:
    """Values for one request: by field name first, then by type. `topic` is the topic it is about."""

    def __init__(self, api_key: int, version: int, topic: str, topic_id: uuid.UUID) -> None:
        self.api_key, self.version, self.topic, self.topic_id = api_key, version, topic, topic_id
        # JoinGroup v0-v3 members join at once and stay: each version gets a group of its own, so no join
        # waits for another version's member to rejoin.
        group = f"{GROUP}-join-v{version}" if api_key == ApiKey.JOIN_GROUP else GROUP
        self.by_name: dict[str, object] = {
            "group_id": group, "key": GROUP, "coordinator_keys": (GROUP,), "groups_names": (GROUP,),
            "name": topic, "topic": topic, "topic_names": (topic,), "resource_name": topic, "resource_type": 2,
            "configuration_keys": None, "acks": 1, "timeout": _ms(5000), "max_wait": _ms(0), "min_bytes": 0,
            "max_bytes": 1 << 20, "partition_max_bytes": 1 << 20, "session_timeout": _ms(10_000),
            "rebalance_timeout": _ms(10_000), "protocol_type": "consumer", "member_id": "", "generation_id": -1,
            "generation_id_or_member_epoch": -1, "replica_id": -1, "current_leader_epoch": -1,
            "last_fetched_epoch": -1, "log_start_offset": -1, "session_epoch": -1, "timestamp": -1,
            "max_num_offsets": 1, "num_partitions": 1, "replication_factor": 1, "assignments": (),
            "forgotten_topics_data": (), "partition_indexes": (0,), "count": 2, "offset": -1,
            "transaction_timeout": _ms(60_000), "transactional_id": None, "producer_id": -1, "producer_epoch": -1,
            "client_software_name": "strom-conformance", "client_software_version": "1.0", "endpoint_type": 1,
            "election_type": 0, "config_operation": 0, "value": "3600000", "leader_epoch": 0,
            "allow_auto_topic_creation": False, "retention_time": _ms(-1), "committed_offset": 0,
            "committed_metadata": "", "replicas": None, "partitions": None if api_key == ApiKey.ELECT_LEADERS
            else ..., "topic_partitions": None if api_key == ApiKey.ELECT_LEADERS else ...,
        }

    def build(self, entity_type: type) -> object:
        hints = typing.get_type_hints(entity_type)
        values = {}
        for item in dataclasses.fields(entity_type):
            value = self.by_name.get(item.name, ...)
            if item.name == "name" and entity_type.__name__.endswith("Config"):
                value = "retention.ms"
            if value is ...:
                if item.default is not dataclasses.MISSING:
                    continue
                value = self.by_type(hints[item.name])
            values[item.name] = value
        return entity_type(**values)

    def by_type(self, kind: object) -> object:
        args = typing.get_args(kind)
        if typing.get_origin(kind) is tuple:
            return (self.by_type(args[0]),)
        if type(None) in args:
            return self.by_type(next(a for a in args if a is not type(None)))
        if dataclasses.is_dataclass(kind):
            return self.build(kind)  # type: ignore[arg-type]
        if kind is Records:
            return _records(self.version)
        if kind is uuid.UUID:
            return self.topic_id
        if isinstance(kind, type):
            if issubclass(kind, bool):
                return False
            if issubclass(kind, int):
                return kind(0)
            if issubclass(kind, str):
                return self.topic if "Topic" in getattr(kind, "__name__", "") else "x"
            if issubclass(kind, bytes):
                return b""
            if issubclass(kind, datetime.timedelta):
                return datetime.timedelta(0)
        raise TypeError(f"no sample value for {kind!r}")


def sample_request(api_key: int, version: int, topic: str, topic_id: uuid.UUID) -> object:
    return Sample(api_key, version, topic, topic_id).build(load_request_schema(api_key, version))


def error_codes(entity: object) -> list[ErrorCode]:
    found = []
    for item in dataclasses.fields(entity):  # type: ignore[arg-type]
        value = getattr(entity, item.name)
        for element in value if isinstance(value, tuple) else (value,):
            if isinstance(element, ErrorCode):
                found.append(element)
            elif dataclasses.is_dataclass(element):
                found += error_codes(element)
    return found


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("conformance"),
                           overrides={"group.initial.rebalance.delay.ms": "0"}) as running:
        with connect(running) as sock:
            create_topic(sock, TOPIC)
        wait_until(lambda: _coordinator_ready(running), 30, message="the group coordinator")
        yield running


def _coordinator_ready(broker) -> bool:
    """FindCoordinator creates `__consumer_offsets`; then OffsetFetch answers once the coordinator loaded."""
    with connect(broker) as sock:
        for api_key, version in ((ApiKey.FIND_COORDINATOR, 1), (ApiKey.OFFSET_FETCH, 3)):
            sock.sendall(encode_request(api_key, version, 1, sample_request(api_key, version, TOPIC, uuid.UUID(int=0))))
            _, response = decode_response(api_key, version, read_frame(sock))
            if response.error_code != ErrorCode.none:
                return False
    return True


@pytest.fixture(scope="module")
def topic_id(broker) -> uuid.UUID:
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    with connect(broker) as sock:
        sock.sendall(encode_request(ApiKey.METADATA, 12, 1, MetadataRequest(
            topics=(MetadataRequestTopic(name=TOPIC, topic_id=uuid.UUID(int=0)),), allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)))
        _, response = decode_response(ApiKey.METADATA, 12, read_frame(sock))
    return response.topics[0].topic_id


def _topic_for(api_key: int, version: int) -> str:
    """CreateTopics/DeleteTopics work on a topic of their own per version (created, then deleted)."""
    return f"ephemeral-v{version}" if api_key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS) else TOPIC


@pytest.mark.parametrize(("api_key", "version"), TABLE, ids=[f"{k.name}-v{v}" for k, v in TABLE])
def test_every_version_answers_a_well_formed_response_of_that_version(broker, topic_id, api_key, version):
    request = sample_request(api_key, version, _topic_for(api_key, version), topic_id)
    with connect(broker) as sock:
        sock.sendall(encode_request(api_key, version, 7, request))
        correlation_id, response = decode_response(api_key, version, read_frame(sock))
    assert correlation_id == 7
    codes = error_codes(response)
    assert ErrorCode.unknown_server_error not in codes, response
    if api_key in MUST_SUCCEED:
        assert set(codes) <= {ErrorCode.none}, response


@pytest.mark.parametrize(("api_key", "version"), TABLE, ids=[f"{k.name}-v{v}" for k, v in TABLE])
def test_every_version_answers_a_refusal_well_formed(broker, topic_id, api_key, version):
    """The same requests about a topic that does not exist (CreateTopics: one that does), so each error path
    answers too."""
    topic = TOPIC if api_key == ApiKey.CREATE_TOPICS else "no-such-topic"
    with connect(broker) as sock:
        sock.sendall(encode_request(api_key, version, 8, sample_request(api_key, version, topic, uuid.uuid4())))
        correlation_id, response = decode_response(api_key, version, read_frame(sock))
    assert correlation_id == 8
    assert ErrorCode.unknown_server_error not in error_codes(response), response


@pytest.mark.parametrize(("api_key", "version"), TABLE, ids=[f"{k.name}-v{v}" for k, v in TABLE])
def test_a_malformed_request_gets_an_error_or_a_closed_connection_and_harms_no_other(broker, topic_id, api_key,
                                                                                   version):
    body = io.BytesIO()
    entity_writer(load_request_schema(api_key, version))(body, sample_request(api_key, version, TOPIC, topic_id))
    frame = encode_request(api_key, version, 9, sample_request(api_key, version, TOPIC, topic_id))
    header_size = len(frame) - len(body.getvalue())
    truncated = frame[4: header_size + len(body.getvalue()) // 2]
    malformed = [len(truncated).to_bytes(4, "big") + truncated]
    if api_key != ApiKey.API_VERSIONS and len(body.getvalue()) > 1:
        malformed.append((len(frame) - 4 + 3).to_bytes(4, "big") + frame[4:] + b"\xff\xff\xff")
    with connect(broker) as bystander:
        for data in malformed:
            with connect(broker) as sock:
                sock.sendall(data)
                sock.shutdown(socket.SHUT_WR)
                try:
                    frame_back = read_frame(sock)
                except ConnectionError:
                    continue  # closed, as Kafka closes a connection whose request does not parse
                correlation_id, response = decode_response(api_key, version, frame_back)
                assert correlation_id == 9
                assert ErrorCode.unknown_server_error not in error_codes(response)
                assert closed_by_broker(sock)
        bystander.sendall(api_versions_v0(11))
        assert read_frame(bystander)[:4] == (11).to_bytes(4, "big")
    assert broker.process.poll() is None
