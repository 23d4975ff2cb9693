"""kafka-python 3.0.12 with snappy, lz4 and zstd (python-snappy, lz4, zstandard) against a real standalone
broker: exact round trips of keys, headers, timestamps and null values (none and gzip are covered in
test_kafka_python.py), and the batches Strom stores really carry the codec the producer chose — so a client
silently falling back to no compression (e.g. zstd needs Produce v7) would fail here."""

import time

import pytest
from kafka import KafkaProducer

from brokerd.protocol.api_keys import ApiKey
from tests.integration.test_kafka_python import consume
from tests.support.kafka_wire import (
    FETCH_VERSION,
    batches,
    connect,
    decode_response,
    encode_request,
    fetch_request,
    read_frame,
)

CODEC_IDS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def stored_batches(broker, topic: str) -> list:
    """Every batch of partition 0 as Strom serves it (raw Fetch v11), not decompressed."""
    found = []
    with connect(broker) as sock:
        while True:
            offset = found[-1].next_offset if found else 0
            sock.sendall(encode_request(ApiKey.FETCH, FETCH_VERSION, len(found),
                                        fetch_request(topic, offset=offset, max_wait_ms=0)))
            correlation_id, response = decode_response(ApiKey.FETCH, FETCH_VERSION, read_frame(sock))
            assert correlation_id == len(found)
            (partition,) = response.responses[0].partitions
            assert partition.error_code == 0
            got = batches(partition.records)
            if not got:
                return found
            found += got


def sample(count: int, tag: bytes = b"") -> list[tuple]:
    """(key, value, headers, timestamp_ms) with null keys, a null value, empty and non-ASCII headers, and
    compressible values large enough that every codec really compresses. Timestamps are recent but not
    monotonic: older ones (e.g. 2023) would let time-based retention (7 days) delete the segment mid-test."""
    base_ms = int(time.time() * 1000) - 60_000
    return [(None if i % 3 == 0 else b"key-%d" % i + tag,
             None if i == 7 else (b"value-%d-" % i + tag) * (1 + i % 5) + bytes(range(256)),
             [("h1", b"a"), ("h\u00e9", b""), ("dup", b"1"), ("dup", b"2")] if i % 2 else [],
             base_ms + 37 * i - 500 * (i % 4))
            for i in range(count)]


@pytest.mark.parametrize("codec", ["snappy", "lz4", "zstd"])
def test_compressed_round_trip_is_exact_and_stored_compressed(broker, topic_name, codec):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=20,
                             batch_size=64 * 1024)
    sent = sample(60)
    futures = [producer.send(topic_name, key=k, value=v, headers=h, timestamp_ms=t) for k, v, h, t in sent]
    offsets = [f.get(timeout=20).offset for f in futures]
    producer.close()
    assert offsets == list(range(60))

    got = consume(broker, topic_name, 60)
    assert [(r.key, r.value, r.headers, r.timestamp, r.offset) for r in got] == [
        (k, v, h, t, i) for i, (k, v, h, t) in enumerate(sent)]

    stored = stored_batches(broker, topic_name)
    assert stored and {b.compression_type for b in stored} == {CODEC_IDS[codec]}
    assert sum(len(list(b)) for b in stored) == 60
    assert sum(b.size_in_bytes for b in stored) < sum(len(v or b"") for _, v, _, _ in sent) / 2


def test_batches_of_every_codec_interleave_in_one_partition(broker, topic_name):
    expected = []
    for codec in CODEC_IDS:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=20)
        sent = sample(10, tag=str(codec).encode())
        futures = [producer.send(topic_name, key=k, value=v, headers=h, timestamp_ms=t, partition=0)
                   for k, v, h, t in sent]
        for future in futures:
            future.get(timeout=20)
        producer.close()
        expected += [(k, v, h, t, codec) for k, v, h, t in sent]

    got = consume(broker, topic_name, len(expected))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [e[:4] for e in expected]
    by_offset = {}
    for batch in stored_batches(broker, topic_name):
        for record in batch:
            by_offset[record.offset] = batch.compression_type
    assert [by_offset[offset] for offset in range(len(expected))] == [CODEC_IDS[e[4]] for e in expected]
