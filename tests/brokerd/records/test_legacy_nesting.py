"""Legacy message sets cannot nest compression (as in Kafka), so a wrapper inside a wrapper is refused
instead of being inflated recursively (a bomb multiplies with every level)."""

import struct
import zlib

import pytest

from brokerd.records import batch as rb
from brokerd.records import legacy
from brokerd.records.errors import InvalidRecordError


def message(value: bytes, codec: int = rb.NO_COMPRESSION) -> bytes:
    """One magic 1 message (offset 0, timestamp 0, null key) with `value`, its attributes naming `codec`."""
    body = struct.pack(">bbq", 1, codec, 0) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body


def test_one_level_of_compression_is_up_converted():
    wrapper = message(rb.compress(rb.GZIP, message(b"a") + message(b"b")), rb.GZIP)
    batch = legacy.to_batch(wrapper)
    header = rb.read_header(batch)
    assert [r.value for r in rb.iter_records(memoryview(batch), header)] == [b"a", b"b"]


def test_a_compressed_message_inside_a_compressed_message_is_refused():
    inner = message(rb.compress(rb.GZIP, message(b"deep")), rb.GZIP)
    with pytest.raises(InvalidRecordError, match="inside a compressed message set"):
        legacy.to_batch(message(rb.compress(rb.GZIP, inner), rb.GZIP))
