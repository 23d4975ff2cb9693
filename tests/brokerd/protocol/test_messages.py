import contextlib
import dataclasses
import datetime
import io
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
from kio.serial import entity_writer
from kio.static.primitive import i32

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS, advertised_api_versions
from brokerd.protocol.error_codes import error_code, error_code_of
from brokerd.protocol.error_response import build_error_response, has_top_level_error
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.messages import encode_element, message_codec, parse_request_header, peek_api
from brokerd.protocol.responses import response_schema


def request_frame(api_key: int, version: int, correlation_id: int, client_id: bytes | None, body: bytes,
                  flexible: bool = False) -> bytes:
    client = b"\xff\xff" if client_id is None else len(client_id).to_bytes(2, "big") + client_id
    header = api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + correlation_id.to_bytes(4, "big") + client
    return header + (b"\0" if flexible else b"") + body


def test_every_served_version_exists_in_kio():
    for api in SUPPORTED_APIS.values():
        for version in range(api.min_version, api.max_version + 1):
            assert message_codec(api.api_key, version) is not None, (api, version)


def test_served_ranges_are_kafka_3_9s_and_keep_the_probe_points_old_clients_need():
    ranges = {a.api_key: (a.min_version, a.max_version) for a in SUPPORTED_APIS.values()}
    assert ranges[ApiKey.PRODUCE] == (0, 11)  # librdkafka < 2.11.1: compression needs Produce ∋ 0
    assert ranges[ApiKey.FETCH] == (0, 17)  # ∋ 4 (record batches), ∋ 10 (zstd)
    assert ranges[ApiKey.METADATA] == (0, 12)
    assert ranges[ApiKey.API_VERSIONS] == (0, 4)
    assert ranges[ApiKey.INIT_PRODUCER_ID][0] == 0
    assert len(advertised_api_versions()) == len(SUPPORTED_APIS)


def test_metadata_request_round_trips_through_header_and_body():
    codec = message_codec(ApiKey.METADATA, 4)
    buffer = io.BytesIO()
    request = MetadataRequest(topics=(MetadataRequestTopic(name="t"),), allow_auto_topic_creation=False)
    entity_writer(codec.request_type)(buffer, request)
    frame = request_frame(3, 4, 77, b"client", buffer.getvalue())
    assert peek_api(frame) == (3, 4, 77)
    header, offset = parse_request_header(frame, flexible=False)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 4, 77, "client")
    assert codec.decode_request(frame, offset) == request


def test_flexible_header_skips_tagged_fields_and_null_client_id_is_none():
    frame = request_frame(60, 1, 5, None, b"", flexible=False) + b"\x01\x07\x02ab" + b"\x00\x01\x00"
    header, offset = parse_request_header(frame, flexible=True)
    assert header.client_id is None
    assert frame[offset:] == b"\x00\x01\x00"


@given(st.binary(max_size=64))
def test_garbage_bodies_raise_malformed_request_only(body):
    codec = message_codec(ApiKey.PRODUCE, 7)
    frame = request_frame(0, 7, 1, b"x", body)
    header, offset = parse_request_header(frame, flexible=False)
    with contextlib.suppress(MalformedRequestError):
        codec.decode_request(frame, offset)


def test_truncated_headers_are_malformed():
    with pytest.raises(MalformedRequestError):
        peek_api(b"\x00\x03")
    with pytest.raises(MalformedRequestError):
        parse_request_header(b"\x00\x03\x00\x04\x00\x00\x00\x01\x00\x09ab", flexible=False)


def test_responses_are_size_prefixed_and_flexible_ones_carry_a_tag_buffer():
    codec = message_codec(ApiKey.DESCRIBE_CLUSTER, 1)
    data = codec.encode_response(9, build_error_response(codec.response_type, ErrorCode.none))
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    assert data[4:8] == (9).to_bytes(4, "big") and data[8] == 0


def test_api_versions_response_header_stays_v0():
    codec = message_codec(ApiKey.API_VERSIONS, 0)
    data = codec.encode_response(3, build_error_response(codec.response_type, ErrorCode.unsupported_version))
    assert data[8:10] == (35).to_bytes(2, "big")


def test_error_names_map_to_kafka_codes():
    assert error_code("CORRUPT_MESSAGE") == 2
    assert error_code("OUT_OF_ORDER_SEQUENCE_NUMBER") == 45
    assert error_code("NO_SUCH_ERROR_NAME") == -1

    class Boom(Exception):
        kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"

    assert error_code_of(Boom()) == 3
    assert error_code_of(ValueError()) == -1


def test_error_responses_exist_for_group_apis():
    for key in (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
                ApiKey.LEAVE_GROUP, ApiKey.OFFSET_FETCH):
        with_error = [v for v in range(SUPPORTED_APIS[key].min_version, SUPPORTED_APIS[key].max_version + 1)
                      if has_top_level_error(message_codec(key, v).response_type)]
        assert with_error, key
        for version in with_error:
            codec = message_codec(key, version)
            response = build_error_response(codec.response_type, ErrorCode.coordinator_not_available)
            assert response.error_code == ErrorCode.coordinator_not_available
            codec.encode_response(1, response)


def _metadata_response(version: int, topics: int) -> tuple[object, list[object]]:
    schema = response_schema(load_response_schema(ApiKey.METADATA, version))
    entries = [schema.MetadataResponseTopic(
        error_code=ErrorCode.none, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), is_internal=t == 0,
        topic_authorized_operations=i32(-2147483648 if t % 2 else 0b1101),
        partitions=tuple(schema.MetadataResponsePartition(
            error_code=ErrorCode.none, partition_index=i32(p), leader_id=i32(1 + p % 3), leader_epoch=i32(t),
            replica_nodes=(i32(1), i32(2), i32(3)), isr_nodes=(i32(1 + p % 3),), offline_replicas=(i32(3),) * (p % 2))
            for p in range(t % 4))) for t in range(topics)]
    response = schema.MetadataResponse(
        throttle_time=datetime.timedelta(0), cluster_id="c1", controller_id=i32(2), topics=(),
        brokers=(schema.MetadataResponseBroker(node_id=i32(1), host="h", port=i32(9092), rack="r1"),),
        cluster_authorized_operations=i32(7))
    return response, entries


@pytest.mark.parametrize("version", range(13))
@pytest.mark.parametrize("topics", [0, 1, 130])  # 130: a compact array's length takes two varint bytes
def test_a_body_assembled_from_encoded_elements_is_kios_encoding_of_the_whole(version, topics):
    codec = message_codec(ApiKey.METADATA, version)
    response, entries = _metadata_response(version, topics)
    assembled = codec.encode_response_body_with(response, "topics", [encode_element(e) for e in entries])
    whole = codec.encode_response_body(dataclasses.replace(response, topics=tuple(entries)))
    assert assembled == whole


@pytest.mark.parametrize("version", range(6))
def test_any_entity_array_can_be_assembled(version):
    codec = message_codec(ApiKey.LIST_GROUPS, version)
    schema = response_schema(codec.response_type)
    groups = [schema.ListedGroup(group_id=f"g{n}", protocol_type="consumer", group_state="Stable", group_type="classic")
              for n in range(3)]
    response = schema.ListGroupsResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, groups=())
    assert (codec.encode_response_body_with(response, "groups", [encode_element(g) for g in groups])
            == codec.encode_response_body(dataclasses.replace(response, groups=tuple(groups))))
