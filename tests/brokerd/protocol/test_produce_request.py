"""The hand-read Produce request (`brokerd.protocol.produce_request`) against kio, the oracle: for every version
0-11, a body kio encodes reads back to the same fields kio reads (records verbatim); every truncation of it,
bytes left over, a lying count or length and a null topic name are MalformedRequestError, as with kio."""

import datetime
import io

import pytest
from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.layout import I32
from brokerd.protocol.messages import message_codec
from brokerd.protocol.produce_request import FLEXIBLE_VERSION, ProduceRequest, decode_produce_request
from brokerd.protocol.responses import MessageSchema

PRODUCE = SUPPORTED_APIS[ApiKey.PRODUCE]
VERSIONS = range(PRODUCE.min_version, PRODUCE.max_version + 1)
PREFIX = b"header bytes"
"""The body is read at an offset, after bytes that stand for the request header."""
TOPICS = [
    ("orders", [(0, b"\x00" * 61 + b"a batch"), (7, None), (2**31 - 1, b"")]),
    ("zahlungseingänge", [(1, bytes(range(256)) * 20)]),
    ("no-partitions", []),
]


def kio_body(version: int, transactional_id: str | None = "tx-1", acks: int = -1, timeout_ms: int = 30_000,
             topics=TOPICS) -> bytes:
    schema = MessageSchema(load_request_schema(ApiKey.PRODUCE, version))
    extra = {"transactional_id": transactional_id} if version >= 3 else {}
    request = schema.ProduceRequest(
        acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms), **extra,
        topic_data=tuple(schema.TopicProduceData(
            name=name, partition_data=tuple(schema.PartitionProduceData(index=index, records=records)
                                            for index, records in partitions))
            for name, partitions in topics))
    out = io.BytesIO()
    entity_writer(type(request))(out, request)
    return out.getvalue()


def read_fields(request) -> tuple:
    return (getattr(request, "transactional_id", None), request.acks,
            request.timeout_ms if hasattr(request, "timeout_ms") else int(request.timeout.total_seconds() * 1000),
            [(t.name, [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
             for t in request.topic_data])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("transactional_id", ["tx-1", None])
def test_reads_what_kio_reads(version, transactional_id):
    body = kio_body(version, transactional_id, acks=1, timeout_ms=1_500)
    kio_request, _ = entity_reader(load_request_schema(ApiKey.PRODUCE, version))(body, 0)
    ours = decode_produce_request(PREFIX + body, len(PREFIX), version)
    assert read_fields(ours) == read_fields(kio_request)
    assert ours.timeout_ms == 1_500 and ours.acks == 1
    assert ours.transactional_id == (transactional_id if version >= 3 else None)
    records = ours.topic_data[0].partition_data[0].records
    assert isinstance(records, bytearray)  # what storage appends in place, copied once


@pytest.mark.parametrize("version", VERSIONS)
def test_the_codec_reads_produce_by_hand(version):
    request = message_codec(ApiKey.PRODUCE, version).decode_request(PREFIX + kio_body(version), len(PREFIX))
    assert isinstance(request, ProduceRequest)
    assert read_fields(request) == read_fields(decode_produce_request(PREFIX + kio_body(version), len(PREFIX),
                                                                      version))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_is_malformed(version):
    body = kio_body(version, topics=[("t", [(0, b"records")])])
    for end in range(len(body)):
        with pytest.raises(MalformedRequestError):
            decode_produce_request(body[:end], 0, version)
    with pytest.raises(MalformedRequestError, match="after the body"):
        decode_produce_request(body + b"\0", 0, version)


@pytest.mark.parametrize("version", [0, 3, 8])
def test_lying_counts_and_lengths_are_malformed(version):
    head = kio_body(version, topics=[])[:-4]  # up to the topic count (classic: int32)
    with pytest.raises(MalformedRequestError):
        decode_produce_request(head + I32.pack(2**31 - 1), 0, version)  # a topic count the frame cannot hold
    with pytest.raises(MalformedRequestError, match="non-nullable"):
        decode_produce_request(head + I32.pack(-1), 0, version)
    with pytest.raises(MalformedRequestError, match="null topic name"):
        decode_produce_request(head + I32.pack(1) + b"\xff\xff" + I32.pack(0), 0, version)
    partition = head + I32.pack(1) + b"\0\1t" + I32.pack(1) + I32.pack(0)
    with pytest.raises(MalformedRequestError, match="runs past the end"):
        decode_produce_request(partition + I32.pack(2**31 - 1) + b"short", 0, version)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= FLEXIBLE_VERSION])
def test_unknown_tagged_fields_are_skipped(version):
    """Kafka skips tags it does not know; kio cannot (so the kio-read APIs refuse them)."""
    body = bytearray(kio_body(version, topics=[("t", [(3, b"abc")])]))
    # the partition's, the topic's and the request's empty tag sections are the last three bytes
    assert body[-3:] == b"\0\0\0"
    tagged = bytes(body[:-3]) + b"\x01\x05\x02hi" + b"\0" + b"\x01\x09\x00"
    ours = decode_produce_request(tagged, 0, version)
    assert read_fields(ours) == ("tx-1", -1, 30_000, [("t", [(3, b"abc")])])
