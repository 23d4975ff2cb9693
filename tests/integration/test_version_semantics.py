"""What each version means, beyond its fields, against a real broker: legacy message sets up-converted on
Produce v0-v2 and down-converted on Fetch v0-v3 (records unchanged), zstd refused below Produce v7, Produce
v8+ per-record errors, ListOffsets v0 offsets and v7 max timestamp, topic ids in Metadata (v10+, by id v12)
and Fetch (v13+), Fetch v12+ diverging epochs. Requests are built with kio's schema of each version."""

import datetime
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.responses import MessageSchema
from tests.support.kafka_wire import (
    batches,
    connect,
    create_topic,
    decode_response,
    encode_request,
    read_frame,
    record_batch,
)

NO_TOPIC_ID = uuid.UUID(int=0)


def call(broker, api_key: int, version: int, **fields) -> object:
    """Send the request `build(schema)` at `version` and return the decoded response."""
    schema = MessageSchema(load_request_schema(api_key, version))
    request = fields.pop("build")(schema)
    with connect(broker) as sock:
        sock.sendall(encode_request(api_key, version, 3, request))
        return decode_response(api_key, version, read_frame(sock))[1]


def produce(broker, version: int, topic: str, records: bytes) -> object:
    def build(s):
        return s.ProduceRequest(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5), topic_data=(
            s.TopicProduceData(name=topic, partition_data=(s.PartitionProduceData(index=0, records=records),)),))
    return call(broker, ApiKey.PRODUCE, version, build=build).responses[0].partition_responses[0]


def fetch(broker, version: int, topic: str, offset: int = 0, topic_id: uuid.UUID = NO_TOPIC_ID,
          last_fetched_epoch: int = -1) -> object:
    def build(s):
        partition = s.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                                     last_fetched_epoch=last_fetched_epoch)
        return s.FetchRequest(max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
                              topics=(s.FetchTopic(topic=topic, topic_id=topic_id, partitions=(partition,)),),
                              forgotten_topics_data=(), rack_id="")
    return call(broker, ApiKey.FETCH, version, build=build).responses[0].partitions[0]


def message_set(magic: int, values: list[bytes], compression: int = 0) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_700_000_000_000 + i if magic else None, key=b"k%d" % i, value=value)
    return bytes(builder.build())


def legacy_messages(records: bytes, magic: int) -> list[tuple[int, int | None, bytes, bytes]]:
    """(offset, timestamp, key, value) of each message of a legacy message set (kafka-python's parser)."""
    found, position = [], 0
    while position < len(records):
        size = int.from_bytes(records[position + 8: position + 12], "big")
        entry = LegacyRecordBatch(records[position: position + 12 + size], magic)
        found += [(r.offset, r.timestamp, r.key, r.value) for r in entry]
        position += 12 + size
    return found


def test_legacy_message_sets_round_trip_through_v2_batches(broker, topic_name):
    with connect(broker) as sock:
        create_topic(sock, topic_name)
    assert produce(broker, 0, topic_name, message_set(0, [b"a", b"b"])).base_offset == 0
    assert produce(broker, 2, topic_name, message_set(1, [b"c", b"d"], compression=1)).base_offset == 2  # gzip
    assert produce(broker, 9, topic_name, record_batch([b"e"], timestamp_ms=1_700_000_000_500)).base_offset == 4
    stored = [r for b in batches(fetch(broker, 11, topic_name).records) for r in b]
    assert [(r.offset, r.key, r.value) for r in stored] == [
        (0, b"k0", b"a"), (1, b"k1", b"b"), (2, b"k0", b"c"), (3, b"k1", b"d"), (4, b"k0", b"e")]
    assert [r.timestamp for r in stored[2:]] == [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_500]
    magic1 = legacy_messages(fetch(broker, 3, topic_name, offset=1).records, 1)
    assert magic1 == [(1, -1, b"k1", b"b"), (2, 1_700_000_000_000, b"k0", b"c"),
                      (3, 1_700_000_000_001, b"k1", b"d"), (4, 1_700_000_000_500, b"k0", b"e")]
    magic0 = legacy_messages(fetch(broker, 0, topic_name).records, 0)
    assert [(o, k, v) for o, _, k, v in magic0] == [(0, b"k0", b"a"), (1, b"k1", b"b"), (2, b"k0", b"c"),
                                                    (3, b"k1", b"d"), (4, b"k0", b"e")]


def test_zstd_needs_produce_v7_and_v3_needs_a_v2_batch(broker, topic_name):
    with connect(broker) as sock:
        create_topic(sock, topic_name)
    zstd = record_batch([b"z" * 2000], compression=4)
    assert zstd[22] & 0x07 == 4
    assert produce(broker, 6, topic_name, zstd).error_code == ErrorCode.unsupported_compression_type
    assert produce(broker, 7, topic_name, zstd).error_code == ErrorCode.none
    assert produce(broker, 3, topic_name, message_set(1, [b"old"])).error_code == ErrorCode.invalid_record


def test_produce_v8_names_the_record_that_broke_a_rule(broker, topic_name):
    with connect(broker) as sock:
        create_topic(sock, topic_name, configs={"cleanup.policy": "compact"})
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=1, key=b"k", value=b"ok", headers=[])
    builder.append(1, timestamp=1, key=None, value=b"no key", headers=[])
    result = produce(broker, 8, topic_name, bytes(builder.build()))
    assert result.error_code == ErrorCode.invalid_record
    assert [(e.batch_index, e.batch_index_error_message) for e in result.record_errors] == [
        (1, "Compacted topic cannot accept message without key.")]
    assert result.error_message == "Compacted topic cannot accept message without key."
    assert produce(broker, 7, topic_name, bytes(builder.build())).error_code == ErrorCode.invalid_record


def list_offsets(broker, version: int, topic: str, timestamp: int) -> object:
    def build(s):
        partition = s.ListOffsetsPartition(partition_index=0, timestamp=timestamp, max_num_offsets=5)
        return s.ListOffsetsRequest(replica_id=-1, isolation_level=0,
                                    topics=(s.ListOffsetsTopic(name=topic, partitions=(partition,)),))
    return call(broker, ApiKey.LIST_OFFSETS, version, build=build).topics[0].partitions[0]


def test_list_offsets_max_timestamp_v7_and_legacy_v0(broker, topic_name):
    with connect(broker) as sock:
        create_topic(sock, topic_name)
    for timestamp in (1_000, 3_000, 2_000):
        produce(broker, 9, topic_name, record_batch([b"v"], timestamp_ms=timestamp))
    newest = list_offsets(broker, 7, topic_name, -3)
    assert (newest.offset, newest.timestamp) == (1, 3_000)
    assert (list_offsets(broker, 7, topic_name, 2_500).offset, list_offsets(broker, 1, topic_name, -1).offset) == (1, 3)
    assert list_offsets(broker, 0, topic_name, -1).old_style_offsets == (3, 0)  # LEO, then the segment base
    assert list_offsets(broker, 0, topic_name, -2).old_style_offsets == (0,)


def test_topic_ids_in_metadata_and_fetch(broker, topic_name):
    def create(s):
        return s.CreateTopicsRequest(timeout=datetime.timedelta(seconds=5), validate_only=False, topics=(
            s.CreatableTopic(name=topic_name, num_partitions=1, replication_factor=1, assignments=(), configs=()),))
    created = call(broker, ApiKey.CREATE_TOPICS, 7, build=create).topics[0]
    assert created.error_code == ErrorCode.none and created.topic_id != NO_TOPIC_ID
    produce(broker, 9, topic_name, record_batch([b"by-id"]))

    def by_id(s):
        return s.MetadataRequest(topics=(s.MetadataRequestTopic(name=None, topic_id=created.topic_id),),
                                 allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    described = call(broker, ApiKey.METADATA, 12, build=by_id).topics[0]
    assert (described.name, described.topic_id, described.error_code) == (topic_name, created.topic_id, 0)
    fetched = fetch(broker, 13, "", topic_id=created.topic_id)
    assert [r.value for b in batches(fetched.records) for r in b] == [b"by-id"]
    assert fetch(broker, 13, "", topic_id=uuid.uuid4()).error_code == ErrorCode.unknown_topic_id


def test_fetch_v12_answers_where_a_diverging_epoch_ends(broker, topic_name):
    with connect(broker) as sock:
        create_topic(sock, topic_name)
    produce(broker, 9, topic_name, record_batch([b"a", b"b"]))
    consistent = fetch(broker, 12, topic_name, offset=2, last_fetched_epoch=0)
    assert consistent.diverging_epoch.epoch == -1  # absent: the default
    diverged = fetch(broker, 12, topic_name, offset=5, last_fetched_epoch=0)  # epoch 0 ends at 2 here
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 2)
    assert not diverged.records
