"""`protocol.bounds` against kio as the oracle: its walk of every request seed (every served API version) ends
exactly where kio's reader ends, and a length or count beyond the frame is refused before kio sees it (the
fuzzer's 85-byte Fetch that made kio's native reader ask for 24 GiB and abort the broker)."""

import struct
from pathlib import Path

import pytest
from kio.serial import entity_reader

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.bounds import check_lengths
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.messages import encode_request, message_codec, parse_request_header, peek_api
from tests.support.kafka_wire import fetch_request

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
SEEDS = sorted((FUZZ / "corpus" / "request").iterdir())


def body(frame: bytes):
    api_key, version, _ = peek_api(frame)
    codec = message_codec(api_key, version)
    _header, offset = parse_request_header(frame, codec.flexible)
    return codec, offset


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_the_walk_of_every_seed_ends_where_kio_does(path):
    frame = path.read_bytes()
    codec, offset = body(frame)
    _request, size = entity_reader(codec.request_type)(frame, offset)
    assert check_lengths(codec.request_type, frame, offset) == offset + size == len(frame)
    if size:
        with pytest.raises(MalformedRequestError):  # one byte short: the last field no longer fits
            check_lengths(codec.request_type, frame[:-1], offset)


def test_the_fuzzers_array_count_is_refused_before_kio_reads_it():
    frame = (FUZZ / "regressions" / "request" / "array-count-native-oom").read_bytes()
    codec, offset = body(frame)
    with pytest.raises(MalformedRequestError, match="cannot fit"):
        codec.decode_request(frame, offset)


@pytest.mark.parametrize("version", [4, 11])
@pytest.mark.parametrize("count", [2**31 - 1, 2**16, 100])
def test_an_array_count_beyond_the_frame_is_refused(version, count):
    frame = bytearray(encode_request(ApiKey.FETCH, version, 1, "c", fetch_request("t"))[4:])
    codec, offset = body(frame)
    # The topics array follows replica_id, max_wait, min_bytes, max_bytes (int32 each), isolation_level (int8)
    # and, from v7, session_id and session_epoch (int32 each). (The regression above is a compact array.)
    position = offset + 4 * 4 + 1 + (8 if version >= 7 else 0)
    assert struct.unpack_from(">i", frame, position)[0] == 1
    struct.pack_into(">i", frame, position, count)
    with pytest.raises(MalformedRequestError, match="cannot fit"):
        codec.decode_request(bytes(frame), offset)
