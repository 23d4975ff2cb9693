"""Fuzz targets: the broker's pure decoders and validators, each a function of one input that may raise only
the errors its callers expect (anything else is a crash: the broker would answer UNKNOWN_SERVER_ERROR, drop
a connection it should have answered, or fail to load a partition).

- `request`: a request frame as `server.dispatcher` reads it: header, version check, the kio body of every
  served version. May raise `MalformedRequestError` (the connection is closed).
- `record_batch`: a producer's records as the leader append checks them (`read_produced_batch`, then
  `validate_append` on a compacted topic with timestamp limits, so every record is decoded, in every codec),
  legacy message sets up-converted first; each input twice, as is and with its batches' CRCs made valid.
  May raise `BrokerError` (the partition's error code).
- `consumer_protocol`: a member's subscription and assignment (`kafkaspec.consumer_protocol`) as the group
  coordinator reads them. May raise `AssignmentError`.
- `consumer_offsets`: `__consumer_offsets` records replayed into groups (`groups.persistence.replay`,
  `Group.from_value`) as a coordinator loads its partition. May raise nothing (bad records are skipped).
- `broker_config`: `server.properties` text through `config.parse_properties` and `build_config`. May raise
  `ConfigError` (one line, exit status 2).

Inputs are raw bytes; `consumer_offsets` reads its records as `key_length u16 | key | value_length i32 (-1 =
tombstone) | value`, repeated. Seeds: `tests/fuzz/corpus/<target>/` (from real client traffic,
`tests/fuzz/capture_seeds.py`); every crash found is kept in `tests/fuzz/regressions/<target>/` and replayed
by `tests/fuzz/test_fuzz.py`.
"""

import contextlib
import struct
from collections.abc import Callable

from brokerd.config import ConfigError, build_config, parse_properties
from brokerd.errors import BrokerError
from brokerd.groups.persistence import replay
from brokerd.groups.state import Group
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.messages import message_codec, parse_request_header, peek_api
from brokerd.records import batch as rb
from brokerd.records import legacy
from brokerd.storage.config import LogConfig
from brokerd.storage.validator import validate_append
from kafkaspec.consumer_protocol import AssignmentError, decode_assignment, subscription_topics

NOW_MS = 1_700_000_000_000
STRICT_LOG = LogConfig(compact=True, timestamp_before_max_ms=86_400_000, timestamp_after_max_ms=3_600_000,
                       max_message_bytes=1 << 30)
"""A topic whose appends decode every record: keys (compaction) and timestamps (limits)."""


def request(data: bytes) -> None:
    try:
        api_key, version, _ = peek_api(data)
        if version not in SUPPORTED_APIS.get(api_key, ()):
            return  # answered from the version table without decoding (or the connection is closed)
        codec = message_codec(api_key, version)
        assert codec is not None, (api_key, version)
        _header, offset = parse_request_header(data, codec.flexible)
        codec.decode_request(data, offset)
    except MalformedRequestError:
        pass


def with_valid_crcs(data: bytes) -> bytes:
    """`data` with the CRC-32C of each whole v2 batch it starts with recomputed, so mutations reach past the
    checksum into the records."""
    fixed = bytearray(data)
    position = 0
    while len(fixed) - position >= rb.HEADER_SIZE:
        size = rb.LOG_OVERHEAD + rb.read_header(fixed, position).batch_length
        if size < rb.HEADER_SIZE or position + size > len(fixed):
            break
        struct.pack_into(">I", fixed, position + rb.CRC_OFFSET, rb.compute_crc(memoryview(fixed), position, size))
        position += size
    return bytes(fixed)


def record_batch(data: bytes) -> None:
    for records in (data, with_valid_crcs(data)):
        try:
            if legacy.is_message_set(records):
                records = legacy.to_batch(records)
            rb.read_produced_batch(records)
            validate_append(records, STRICT_LOG, NOW_MS, from_leader=True)
        except BrokerError:
            pass


def consumer_protocol(data: bytes) -> None:
    subscription_topics(data)
    with contextlib.suppress(AssignmentError):
        decode_assignment(data)


_KEY_LENGTH = struct.Struct(">H")
_VALUE_LENGTH = struct.Struct(">i")


def offsets_records(data: bytes) -> list[tuple[bytes, bytes | None]]:
    """The `(key, value)` records of a `consumer_offsets` input (a truncated tail is dropped)."""
    records: list[tuple[bytes, bytes | None]] = []
    position = 0
    while position + _KEY_LENGTH.size + _VALUE_LENGTH.size <= len(data):
        (key_length,) = _KEY_LENGTH.unpack_from(data, position)
        position += _KEY_LENGTH.size
        key = data[position : position + key_length]
        position += key_length
        if position + _VALUE_LENGTH.size > len(data):
            break
        (value_length,) = _VALUE_LENGTH.unpack_from(data, position)
        position += _VALUE_LENGTH.size
        value = None if value_length < 0 else data[position : position + value_length]
        position += max(value_length, 0)
        records.append((key, value))
    return records


def encode_offsets_records(records: list[tuple[bytes, bytes | None]]) -> bytes:
    """The inverse of `offsets_records` (for seeds)."""
    return b"".join(_KEY_LENGTH.pack(len(key)) + key + (
        _VALUE_LENGTH.pack(-1) if value is None else _VALUE_LENGTH.pack(len(value)) + value)
        for key, value in records)


def consumer_offsets(data: bytes) -> None:
    metadata, _offsets = replay(offsets_records(data))
    for group_id, value in metadata.items():
        Group.from_value(group_id, value)


def broker_config(data: bytes) -> None:
    with contextlib.suppress(ConfigError):
        build_config(parse_properties(data.decode("utf-8", "replace"), "fuzz"), environ={})


TARGETS: dict[str, Callable[[bytes], None]] = {
    "request": request,
    "record_batch": record_batch,
    "consumer_protocol": consumer_protocol,
    "consumer_offsets": consumer_offsets,
    "broker_config": broker_config,
}
