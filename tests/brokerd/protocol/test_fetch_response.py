"""The hand-laid Fetch response (`brokerd.protocol.fetch_response`) against kio, the oracle: for every
version 0-17 the encoded body decodes with kio's schema of that version into the expected entity, and is
byte-identical to kio's own encoding of that entity."""

import datetime
import uuid

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.protocol.fetch_response import (
    NodeEndpoint,
    PartitionAnswer,
    TopicAnswer,
    decode_fetch_response,
    encode_fetch_response,
)
from brokerd.protocol.responses import MessageSchema
from tests.brokerd.protocol.kio_oracle import assert_laid_out_as_kio

FETCH = SUPPORTED_APIS[ApiKey.FETCH]
TOPIC_ID = uuid.UUID("6a1f0c1e-1c2b-4d4e-8f00-112233445566")
RECORDS = b"\x00" * 70


class FileRange:
    """Stands in for a storage file region: only its length is laid out, its bytes go by sendfile."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.length = len(data)


def answers() -> list[TopicAnswer]:
    return [TopicAnswer("orders", TOPIC_ID, [
        PartitionAnswer(0, 0, 10, 10, 2, FileRange(RECORDS)),
        PartitionAnswer(1, 0, 5, 5, 0, None, diverging_epoch=(3, 4)),
        PartitionAnswer(2, 6, current_leader=(2, 7)),
        PartitionAnswer(3, 0, 9, 9, 0, b"\x01" * 12),
    ])]


def expected(version: int) -> object:
    """The same answer built with kio's entities of `version` (what kio would encode)."""
    schema = MessageSchema(load_response_schema(ApiKey.FETCH, version))
    partitions = []
    for p in answers()[0].partitions:
        records = p.records.data if isinstance(p.records, FileRange) else p.records
        extra = {}
        if version >= 12 and p.diverging_epoch is not None:
            epoch, end_offset = p.diverging_epoch
            extra["diverging_epoch"] = schema.EpochEndOffset(epoch=epoch, end_offset=end_offset)
        if version >= 12 and p.current_leader is not None:
            extra["current_leader"] = schema.LeaderIdAndEpoch(leader_id=p.current_leader[0],
                                                              leader_epoch=p.current_leader[1])
        partitions.append(schema.PartitionData(
            partition_index=p.index, error_code=ErrorCode(p.error_code), high_watermark=p.high_watermark,
            last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset, aborted_transactions=(),
            preferred_read_replica=-1, records=records or b"", **extra))
    return schema.FetchResponse(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=0,
        responses=(schema.FetchableTopicResponse(topic="orders", topic_id=TOPIC_ID, partitions=tuple(partitions)),),
        node_endpoints=(schema.NodeEndpoint(node_id=2, host="127.0.0.1", port=9093, rack=None),)
        if version >= 16 else ())


def laid_out(version: int) -> bytes:
    chunks, size = encode_fetch_response(version, answers(),
                                         node_endpoints=[NodeEndpoint(2, "127.0.0.1", 9093, None)])
    body = b"".join(c if isinstance(c, bytes) else c.data for c in chunks)
    assert len(body) == size
    return body


@pytest.mark.parametrize("version", range(FETCH.min_version, FETCH.max_version + 1))
def test_every_version_decodes_with_kio_and_matches_kios_encoding(version):
    assert_laid_out_as_kio(ApiKey.FETCH, version, laid_out(version), expected(version))


def test_v11_round_trips_through_the_replica_fetchers_decoder():
    body = laid_out(11)
    decoded = decode_fetch_response(memoryview((42).to_bytes(4, "big") + body))
    assert decoded.correlation_id == 42
    assert [(p.partition, p.error_code, bytes(p.records)) for p in decoded.partitions] == [
        (0, 0, RECORDS), (1, 0, b""), (2, 6, b""), (3, 0, b"\x01" * 12)]


@pytest.mark.parametrize("version", [7, 11, 12, 13, 17])
def test_session_id_and_top_level_error_are_laid_out_as_kio(version):
    chunks, size = encode_fetch_response(version, [], error_code=ErrorCode.invalid_fetch_session_epoch,
                                         session_id=123_456)
    body = b"".join(c for c in chunks if isinstance(c, bytes))
    assert len(body) == size
    schema = MessageSchema(load_response_schema(ApiKey.FETCH, version))
    assert_laid_out_as_kio(ApiKey.FETCH, version, body, schema.FetchResponse(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.invalid_fetch_session_epoch, session_id=123_456,
        responses=(), **({"node_endpoints": ()} if version >= 16 else {})))


def test_the_replica_fetchers_decoder_reads_the_session_id_and_top_level_error():
    chunks, _ = encode_fetch_response(11, [], error_code=ErrorCode.fetch_session_id_not_found, session_id=99)
    decoded = decode_fetch_response(memoryview((5).to_bytes(4, "big") + b"".join(chunks)))  # type: ignore[arg-type]
    assert (decoded.error_code, decoded.session_id) == (ErrorCode.fetch_session_id_not_found, 99)
    assert decoded.partitions == []
