"""The coordinator's batch builder against kafka-python's reader, and round trips through our own codec."""

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from brokerd.records import batch as rb
from brokerd.records.builder import build_batch

pairs = st.lists(st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=300)),
                 min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(records=pairs, timestamp=st.integers(0, 2**41))
def test_kafka_python_reads_what_we_build(records, timestamp):
    data = build_batch(records, timestamp)
    oracle = DefaultRecordBatch(bytearray(data))
    assert oracle.validate_crc()
    assert (oracle.base_offset, oracle.producer_id, oracle.compression_type) == (0, -1, 0)
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in oracle] == [
        (i, key, value, timestamp, []) for i, (key, value) in enumerate(records)]


@settings(max_examples=30, deadline=None)
@given(records=pairs)
def test_our_codec_round_trips(records):
    data = memoryview(build_batch(records, 1_700_000_000_000))
    [(position, header)] = list(rb.iter_batches(data))
    rb.validate_header(header)
    rb.verify_crc(data, position, header)
    assert header.record_count == header.last_offset_delta + 1 == len(records)
    assert [(r.key, r.value) for r in rb.iter_records(data, header)] == records
