"""The v2 batch codec against kafka-python / aiokafka as oracles (their builders and readers)."""

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from brokerd.records import batch as rb
from brokerd.records.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError

records_strategy = st.lists(
    st.tuples(st.none() | st.binary(max_size=20), st.none() | st.binary(max_size=200),
              st.integers(0, 2**41)),
    min_size=1, max_size=30,
)


def build(records, codec=0, builder=DefaultRecordBatchBuilder):
    b = builder(2, codec, 0, -1, -1, -1, 1 << 30)
    for delta, (key, value, timestamp) in enumerate(records):
        b.append(delta, timestamp, key, value, [])
    return bytes(b.build())


@settings(max_examples=60, deadline=None)
@given(records=records_strategy, codec=st.sampled_from([0, 1]))
def test_header_and_records_match_kafka_python(records, codec):
    data = build(records, codec)
    header = rb.read_header(data)
    oracle = DefaultRecordBatch(bytearray(data))
    assert header.size == len(data) == oracle.size_in_bytes
    assert (header.record_count, header.last_offset_delta, header.crc) == (len(records), len(records) - 1, oracle.crc)
    assert (header.base_timestamp, header.max_timestamp) == (oracle.first_timestamp, oracle.max_timestamp)
    rb.verify_crc(memoryview(data), 0, header)
    decoded = [(r.offset_delta, r.key, r.value, rb.record_timestamp(header, r))
               for r in rb.iter_records(memoryview(data), header)]
    assert decoded == [(r.offset, r.key, r.value, r.timestamp) for r in oracle]


@pytest.mark.parametrize("codec", [rb.GZIP, rb.SNAPPY, rb.LZ4, rb.ZSTD])
def test_every_codec_decodes(codec):
    records = [(b"k%d" % (i % 7), b"value-%d" % i * 10, 1000 + i) for i in range(100)]
    data = build(records, codec, builder=AioBuilder)
    header = rb.read_header(data)
    assert header.codec == codec
    assert [(r.key, r.value) for r in rb.iter_records(memoryview(data), header)] == [
        (k, v) for k, v, _ in records]


@settings(max_examples=40, deadline=None)
@given(records=records_strategy, position=st.integers(rb.ATTRIBUTES_OFFSET, 10_000), bit=st.integers(0, 7))
def test_any_flipped_bit_under_the_crc_is_detected(records, position, bit):
    data = bytearray(build(records))
    data[position % (len(data) - rb.ATTRIBUTES_OFFSET) + rb.ATTRIBUTES_OFFSET] ^= 1 << bit
    header = rb.read_header(data)
    with pytest.raises(CorruptRecordError):
        rb.verify_crc(memoryview(data), 0, header)


def test_offset_and_epoch_rewrite_keeps_the_crc_valid():
    data = bytearray(build([(b"k", b"v", 5)] * 3))
    rb.assign_offsets(data, 0, 1234, 77)
    oracle = DefaultRecordBatch(data)
    assert (oracle.base_offset, oracle.leader_epoch, oracle.validate_crc()) == (1234, 77, True)
    assert [r.offset for r in oracle] == [1234, 1235, 1236]


def test_log_append_time_rewrites_max_timestamp_and_crc():
    data = bytearray(build([(b"k", b"v", 5), (b"k", b"w", 9)]))
    rb.set_log_append_time(data, 0, rb.read_header(data), 424242)
    oracle = DefaultRecordBatch(data)
    assert oracle.validate_crc() and oracle.timestamp_type == 1
    assert [r.timestamp for r in oracle] == [424242, 424242]


def test_iter_batches_rejects_torn_framing():
    data = build([(b"k", b"v", 1)]) * 2
    assert [p for p, _ in rb.iter_batches(memoryview(data))] == [0, len(data) // 2]
    with pytest.raises(CorruptRecordError):
        list(rb.iter_batches(memoryview(data[:-1])))
    with pytest.raises(CorruptRecordError):
        list(rb.iter_batches(memoryview(data[: rb.HEADER_SIZE - 1])))


def test_validate_header_rules():
    header = rb.read_header(build([(b"k", b"v", 1)]))
    rb.validate_header(header)
    with pytest.raises(InvalidRecordError):
        rb.validate_header(header._replace(magic=1))
    with pytest.raises(UnsupportedCompressionTypeError):
        rb.validate_header(header._replace(attributes=6))
    with pytest.raises(InvalidRecordError):
        rb.validate_header(header._replace(record_count=0))


def test_records_overrunning_their_batch_are_corrupt():
    data = bytearray(build([(b"key", b"value", 1)]))
    struct.pack_into(">i", data, 57, 2)  # claims two records, holds one
    with pytest.raises(CorruptRecordError):
        list(rb.iter_records(memoryview(data), rb.read_header(data)))


@settings(max_examples=40, deadline=None)
@given(records=records_strategy, keep=st.data(), codec=st.sampled_from([0, 1]))
def test_filtered_batch_keeps_offsets_and_parses(records, keep, codec):
    data = build(records, codec)
    header = rb.read_header(data)._replace(base_offset=500)
    decoded = list(rb.iter_records(memoryview(data), header))
    mask = keep.draw(st.lists(st.booleans(), min_size=len(decoded), max_size=len(decoded)))
    kept = [r for r, m in zip(decoded, mask, strict=True) if m] or decoded[-1:]
    rebuilt = bytearray(rb.build_filtered_batch(header, kept))
    rb.assign_offsets(rebuilt, 0, 500, 0)
    oracle = DefaultRecordBatch(rebuilt)
    assert oracle.validate_crc()
    assert [(r.offset, r.key, r.value) for r in oracle] == [
        (500 + r.offset_delta, r.key, r.value) for r in kept]
    assert oracle.max_timestamp == max(header.base_timestamp + r.timestamp_delta for r in kept)


@pytest.mark.parametrize("codec", [rb.GZIP, rb.SNAPPY, rb.LZ4, rb.ZSTD])
def test_decompression_is_bounded_in_every_codec(codec):
    data = bytes(range(256)) * 4096  # 1 MiB
    compressed = rb.compress(codec, data)
    assert bytes(rb.decompress(codec, compressed, limit=len(data))) == data  # exactly the limit is fine
    with pytest.raises(InvalidRecordError, match="decompress to more than"):
        rb.decompress(codec, compressed, limit=len(data) - 1)


@pytest.mark.parametrize("codec", [rb.GZIP, rb.SNAPPY, rb.LZ4, rb.ZSTD])
def test_a_stream_that_does_not_decompress_is_corrupt_and_costs_no_growth(codec):
    with pytest.raises(CorruptRecordError):
        rb.decompress(codec, b"\x82SNAPPY\x00" + b"\xff" * 100 if codec == rb.SNAPPY else b"\x00garbage" * 20)
