"""Request headers and message bodies: bytes ⇄ kio dataclasses.

Request header (v1, or v2 for flexible versions), big-endian::

    request_api_key int16 | request_api_version int16 | correlation_id int32 |
    client_id nullable string (int16 length, -1 = null; legacy even in v2) | [v2: tagged fields]

Response header: correlation_id int32, plus an empty tagged-field section (one 0x00 byte) when the
response version is flexible — except ApiVersions, whose response header is always v0 (KIP-511).
Encoded responses include their int32 size prefix, ready for the transport.

Both sides live here: the server's (`parse_request_header`, `MessageCodec.decode_request` and
`encode_response`, or `encode_response_body` for a body encoded once and framed per answer by `frame_response`,
or `encode_response_body_with` for a body assembled from array elements encoded once each by `encode_element`)
and the client's (`encode_request`, or `frame_request` around a body laid out by hand, and `decode_response`,
used by `brokerd.client`).
"""

import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cache

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import get_field_tag
from kio.serial._serialize import get_field_writer
from kio.serial.errors import SerialError
from kio.serial.writers import Writer, write_compact_array_length, write_legacy_array_length
from kio.static.primitive import i32

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.bounds import check_lengths
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.produce_request import decode_produce_request
from brokerd.varints import VarintError, read_uvarint

_HEADER_FIXED = struct.Struct(">hhih")
_HEADER_PEEK = struct.Struct(">hhi")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
_SIZE = struct.Struct(">i")
_NO_TAGS = b"\0"
"""An empty tagged-field section (flexible headers)."""
_DECODE_ERRORS = (SerialError, ValueError, TypeError, OverflowError, KeyError, IndexError)
"""What kio's reader raises on bytes that are not a message of the schema: KeyError for a tagged field the
schema lacks (Kafka would skip it; kio cannot, so such a request is malformed here), the rest for bad
lengths, values and truncation."""
_READ_BY_HAND = {ApiKey.PRODUCE: decode_produce_request}
"""Requests read without kio (hot paths): (frame, offset, version) → the request; raise MalformedRequestError."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_api(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes — all the error-35 path needs."""
    if len(frame) < 8:
        raise MalformedRequestError(f"request header truncated ({len(frame)} bytes)")
    return _HEADER_PEEK.unpack_from(frame, 0)


def parse_request_header(frame: bytes, flexible: bool) -> tuple[RequestHeader, int]:
    """The header and the offset where the body starts."""
    if len(frame) < 10:
        raise MalformedRequestError(f"request header truncated ({len(frame)} bytes)")
    api_key, api_version, correlation_id, client_id_length = _HEADER_FIXED.unpack_from(frame, 0)
    offset = 10
    client_id = None
    if client_id_length >= 0:
        end = offset + client_id_length
        if end > len(frame):
            raise MalformedRequestError("client_id runs past the end of the frame")
        try:
            client_id = frame[offset:end].decode()
        except UnicodeDecodeError as exc:
            raise MalformedRequestError("client_id is not UTF-8") from exc
        offset = end
    if flexible:
        offset = _skip_tagged_fields(frame, offset)
    return RequestHeader(api_key, api_version, correlation_id, client_id), offset


def _skip_tagged_fields(buf: bytes, offset: int) -> int:
    try:
        count, offset = read_uvarint(buf, offset)
        for _ in range(count):
            _tag, offset = read_uvarint(buf, offset)
            size, offset = read_uvarint(buf, offset)
            offset += size
            if offset > len(buf):
                raise MalformedRequestError("tagged field runs past the end of the frame")
    except VarintError as exc:
        raise MalformedRequestError(f"bad unsigned varint in tagged fields: {exc}") from None
    return offset


@dataclass(frozen=True, slots=True)
class MessageCodec:
    """The kio request/response types of one (api_key, version), with their cached reader/writer."""

    api_key: int
    version: int
    request_type: type
    response_type: type
    flexible: bool

    def decode_request(self, frame: bytes, offset: int) -> object:
        """The request body at `offset`: read by hand for the APIs of `_READ_BY_HAND` (Produce), else by kio,
        with every length and count checked against the frame first (`bounds`: kio's native reader would
        reserve memory for a lying array count and abort the process)."""
        read = _READ_BY_HAND.get(self.api_key)
        if read is not None:
            return read(frame, offset, self.version)
        check_lengths(self.request_type, frame, offset)
        try:
            request, _size = entity_reader(self.request_type)(frame, offset)
        except _DECODE_ERRORS as exc:
            raise MalformedRequestError(
                f"cannot decode {self.request_type.__name__} v{self.version}: {exc}"
            ) from exc
        return request

    def encode_response(self, correlation_id: int, response: object) -> bytes:
        """Size prefix + response header + body."""
        return _framed(_SIZE.pack(correlation_id) + self._header_tags, self.response_type, response)

    def encode_response_body(self, response: object) -> bytes:
        """What follows the correlation id in `encode_response`'s frame (the flexible header's tag section,
        then the body), for a body encoded once and answered many times: `frame_response(correlation_id,
        len(body)) + body` is byte for byte `encode_response(correlation_id, response)`."""
        buffer = io.BytesIO()
        buffer.write(self._header_tags)
        entity_writer(self.response_type)(buffer, response)
        return buffer.getvalue()

    def encode_response_body_with(self, response: object, array_field: str, elements: Sequence[bytes]) -> bytes:
        """`encode_response_body(response)` with its entity-array field `array_field` given as the encodings of its
        elements (`encode_element` of each, kept by the caller across responses), whatever `response` holds in
        that field: encoding costs O(elements) joins instead of kio writing every field of every element (an
        all-topics Metadata body: 2 s at 100,000 partitions). Byte for byte kio's encoding of the response with
        those elements in the field (the tests' oracle). The response type may have no tagged fields."""
        before, after = _writers_around(self.response_type, array_field)
        flexible = self.response_type.__flexible__
        buffer = io.BytesIO()
        buffer.write(self._header_tags)
        for name, write in before:
            write(buffer, getattr(response, name))
        if flexible:
            write_compact_array_length(buffer, len(elements))
        else:
            write_legacy_array_length(buffer, i32(len(elements)))
        buffer.write(b"".join(elements))
        for name, write in after:
            write(buffer, getattr(response, name))
        if flexible:
            buffer.write(_NO_TAGS)
        return buffer.getvalue()

    @property
    def _header_tags(self) -> bytes:
        return _NO_TAGS if self.flexible and self.api_key != ApiKey.API_VERSIONS else b""


def encode_element(entity: object) -> bytes:
    """kio's encoding of one entity as an element of an array (no header, no size): what
    `MessageCodec.encode_response_body_with` assembles."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@cache
def _writers_around(entity_type: type, array_field: str) -> tuple[tuple[tuple[str, Writer], ...], ...]:
    """kio's writers of `entity_type`'s fields before `array_field` and of those after it, in wire order."""
    before: list[tuple[str, Writer]] = []
    after: list[tuple[str, Writer]] = []
    found = False
    for field in fields(entity_type):
        assert get_field_tag(field) is None, f"{entity_type.__name__} has tagged fields"
        if field.name == array_field:
            found = True
            continue
        (after if found else before).append(
            (field.name, get_field_writer(field, entity_type.__flexible__, is_request_header=False, is_tag=False)))
    assert found, f"{entity_type.__name__} has no field {array_field}"
    return tuple(before), tuple(after)


def _framed(header: bytes, entity_type: type, entity: object) -> bytes:
    """Size prefix + `header` + the kio encoding of `entity`: a frame ready for the transport."""
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    buffer.write(header)
    entity_writer(entity_type)(buffer, entity)
    data = buffer.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buffer.getvalue()


@cache
def message_codec(api_key: int, version: int) -> MessageCodec | None:
    """The codec for (api_key, version), or None if kio has no such message."""
    try:
        request_type = load_request_schema(api_key, version)
        response_type = load_response_schema(api_key, version)
    except (UnknownAPIKey, UnknownEntity):
        return None
    return MessageCodec(api_key, version, request_type, response_type, request_type.__flexible__)


def frame_response(correlation_id: int, body_size: int) -> bytes:
    """Size prefix and v0 response header for a hand-encoded body of `body_size` bytes."""
    return _SIZE_AND_CORRELATION.pack(body_size + 4, correlation_id)


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str, request: object) -> bytes:
    """Size prefix + request header (v1, or v2 with an empty tagged-field section for flexible versions) +
    body: the client side (`brokerd.client`)."""
    codec = message_codec(api_key, version)
    assert codec is not None, f"kio has no {api_key} v{version}"
    return _framed(_request_header(codec, correlation_id, client_id), codec.request_type, request)


def frame_request(api_key: int, version: int, correlation_id: int, client_id: str, body: bytes) -> bytes:
    """`encode_request` for a body laid out by hand (`fetch_request`): size prefix + request header + body."""
    codec = message_codec(api_key, version)
    assert codec is not None, f"kio has no {api_key} v{version}"
    header = _request_header(codec, correlation_id, client_id)
    return _SIZE.pack(len(header) + len(body)) + header + body


def _request_header(codec: MessageCodec, correlation_id: int, client_id: str) -> bytes:
    name = client_id.encode()
    header = _HEADER_FIXED.pack(codec.api_key, codec.version, correlation_id, len(name)) + name
    return header + _NO_TAGS if codec.flexible else header


def response_correlation_id(frame: bytes | memoryview) -> int:
    """The correlation id a response frame (without its size prefix) answers."""
    if len(frame) < 4:
        raise MalformedRequestError(f"response of {len(frame)} bytes has no header")
    return _SIZE.unpack_from(frame, 0)[0]


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, object]:
    """(correlation_id, response entity) from a response frame without its size prefix (header v0, or v1
    with a tagged-field section for flexible versions other than ApiVersions)."""
    codec = message_codec(api_key, version)
    assert codec is not None, f"kio has no {api_key} v{version}"
    correlation_id = response_correlation_id(frame)
    offset = 4
    if codec.flexible and api_key != ApiKey.API_VERSIONS:
        offset = _skip_tagged_fields(frame, offset)
    try:
        response, _size = entity_reader(codec.response_type)(frame, offset)
    except _DECODE_ERRORS as exc:
        raise MalformedRequestError(f"cannot decode {codec.response_type.__name__}: {exc}") from exc
    return correlation_id, response
