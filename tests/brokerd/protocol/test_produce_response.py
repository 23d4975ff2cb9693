"""The hand-laid Produce response (`brokerd.protocol.produce_response`) against kio, the oracle: for every
version 0-11 the body decodes with kio's schema of that version into the entity the answer means (fields the
version lacks dropped), and is byte-identical to kio's own encoding of that entity."""

import datetime

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.protocol.layout import NodeEndpoint
from brokerd.protocol.produce_response import PartitionResult, encode_produce_response
from brokerd.protocol.responses import MessageSchema
from tests.brokerd.protocol.kio_oracle import assert_laid_out_as_kio

PRODUCE = SUPPORTED_APIS[ApiKey.PRODUCE]
APPENDED_AT_MS = 1_700_000_000_123
ENDPOINTS = [NodeEndpoint(2, "127.0.0.1", 9093, None), NodeEndpoint(3, "broker-3.example", 9094, "rack-b")]
TOPICS = [
    ("orders", [
        PartitionResult(0, ErrorCode.none, 1_234_567, -1, 0),
        PartitionResult(1, ErrorCode.none, 2**40, APPENDED_AT_MS, 2**39),
        PartitionResult(2, ErrorCode.invalid_record, record_errors=((3, "the key is missing"),),
                        error_message="the key is missing"),
    ]),
    ("zahlungseingänge", [
        PartitionResult(7, ErrorCode.not_leader_or_follower, current_leader=(2, 11), error_message="moved"),
        PartitionResult(8, ErrorCode.not_leader_or_follower, current_leader=(3, 4)),
        PartitionResult(9, ErrorCode.record_list_too_large, record_errors=((0, None),)),
    ]),
    ("empty-answer", []),
]


def expected(version: int) -> object:
    """The same answer built with kio's entities of `version`."""
    schema = MessageSchema(load_response_schema(ApiKey.PRODUCE, version))
    responses = []
    for name, partitions in TOPICS:
        results = []
        for p in partitions:
            extra = {}
            if p.current_leader is not None and version >= 10:
                extra["current_leader"] = schema.LeaderIdAndEpoch(leader_id=p.current_leader[0],
                                                                  leader_epoch=p.current_leader[1])
            results.append(schema.PartitionProduceResponse(
                index=p.index, error_code=ErrorCode(p.error_code), base_offset=p.base_offset,
                log_append_time=None if p.log_append_time_ms < 0 else datetime.datetime.fromtimestamp(
                    p.log_append_time_ms / 1000, datetime.UTC),
                log_start_offset=p.log_start_offset, error_message=p.error_message,
                record_errors=tuple(schema.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                    for i, m in p.record_errors) if version >= 8 else (), **extra))
        responses.append(schema.TopicProduceResponse(name=name, partition_responses=tuple(results)))
    return schema.ProduceResponse(
        responses=tuple(responses), throttle_time=datetime.timedelta(0),
        node_endpoints=tuple(schema.NodeEndpoint(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
                             for n in ENDPOINTS) if version >= 10 else ())


@pytest.mark.parametrize("version", range(PRODUCE.min_version, PRODUCE.max_version + 1))
def test_every_version_decodes_with_kio_and_matches_kios_encoding(version):
    body = encode_produce_response(version, TOPICS, ENDPOINTS)
    assert_laid_out_as_kio(ApiKey.PRODUCE, version, body, expected(version))


def test_no_leader_moved_means_no_endpoints_and_no_current_leader_tags():
    topics = [("orders", [PartitionResult(0, ErrorCode.none, 5, -1, 0)])]
    body = encode_produce_response(11, topics)
    decoded, _ = entity_reader(load_response_schema(ApiKey.PRODUCE, 11))(body, 1)
    assert decoded.node_endpoints == ()
    assert decoded.responses[0].partition_responses[0].current_leader.leader_id == -1
