"""Every length and array count of a request body checked against the bytes left in its frame, before kio's
native reader sees it.

kio's reader (Rust) reserves memory for an array from its declared count before reading any element: a
request of 85 bytes declaring 2**31 elements makes it ask for 24 GiB, and a failed allocation in Rust aborts
the whole broker process (found by `tests/fuzz`, target `request`). An element takes at least one byte, so a
count above the bytes left cannot be honest; refusing it bounds what the reader reserves by the frame size
(itself bounded by `socket.request.max.bytes`).

`check_lengths(entity_type, frame, offset)` walks the body as kio's schema lays it out (legacy int16/int32 or
compact unsigned-varint lengths and counts; nested and nullable entities; tagged fields skipped by their
size, as no served request has an array in a tagged field) and raises `MalformedRequestError` for a length
or count beyond the frame. One walker per schema is built once (closures, as kio builds its writers): runs of
fixed-size fields are one step, an array of fixed-size elements is one step whatever its count, so a check
costs a few Python calls per variable-size field, never per byte.
"""

import struct
from collections.abc import Callable
from dataclasses import fields
from functools import cache

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from brokerd.protocol.errors import MalformedRequestError
from brokerd.varints import VarintError, read_uvarint

Skip = Callable[[bytes, int], int]
"""(frame, position) -> the position after the value; raises MalformedRequestError."""

_FIXED_SIZES = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "timedelta_i32": 4,
                "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def check_lengths(entity_type: type, frame: bytes, offset: int) -> int:
    """Where the body at `offset` ends; raises MalformedRequestError if a length or count in it exceeds the
    frame."""
    skipper = _entity_skipper(entity_type)
    return _need(frame, offset, skipper) if isinstance(skipper, int) else skipper(frame, offset)


def _need(frame: bytes, position: int, size: int) -> int:
    end = position + size
    if size < 0 or end > len(frame):
        raise MalformedRequestError(f"a field of {size} bytes at byte {position} runs past the frame")
    return end


def _uvarint(frame: bytes, position: int) -> tuple[int, int]:
    try:
        return read_uvarint(frame, position)
    except VarintError as exc:
        raise MalformedRequestError(f"bad unsigned varint at byte {position}: {exc}") from None


def _length(frame: bytes, position: int, compact: bool, wide: bool) -> tuple[int, int]:
    """(length or count, -1 for null; position after it), in the field's encoding."""
    if compact:
        value, position = _uvarint(frame, position)
        return value - 1, position
    codec = _I32 if wide else _I16
    _need(frame, position, codec.size)
    return codec.unpack_from(frame, position)[0], position + codec.size


def _count(frame: bytes, position: int, compact: bool) -> tuple[int, int]:
    count, position = _length(frame, position, compact, wide=True)
    if count > len(frame) - position:
        raise MalformedRequestError(
            f"an array of {count} elements at byte {position} cannot fit in the {len(frame) - position} bytes left")
    return count, position


def _fixed(size: int) -> Skip:
    return lambda frame, position: _need(frame, position, size)


def _variable_skipper(kafka_type: str, compact: bool) -> Skip:
    """A string, bytes or records field."""
    if kafka_type not in ("string", "bytes", "records"):
        raise AssertionError(f"no skipper for kafka_type {kafka_type}")
    wide = kafka_type != "string"

    def skip(frame: bytes, position: int) -> int:
        length, position = _length(frame, position, compact, wide)
        return position if length < 0 else _need(frame, position, length)
    return skip


def _array_skipper(element: Skip | int, compact: bool) -> Skip:
    """An array of `element`s: a skipper, or a fixed element size (checked in one step)."""
    if isinstance(element, int):
        size = element

        def skip_fixed(frame: bytes, position: int) -> int:
            count, position = _count(frame, position, compact)
            return position if count <= 0 else _need(frame, position, count * size)
        return skip_fixed

    def skip(frame: bytes, position: int) -> int:
        count, position = _count(frame, position, compact)
        for _ in range(count):
            position = element(frame, position)
        return position
    return skip


def _nullable(entity: Skip) -> Skip:
    def skip(frame: bytes, position: int) -> int:
        _need(frame, position, 1)
        return position + 1 if frame[position] == 0xFF else entity(frame, position + 1)
    return skip


def skip_tagged_fields(frame: bytes, position: int) -> int:
    """The position after the tagged-field section at `position`, its fields skipped by their size (Kafka
    skips tags it does not know); MalformedRequestError if it runs past the frame."""
    if position < len(frame) and frame[position] == 0:
        return position + 1  # none: the usual case
    count, position = _uvarint(frame, position)
    for _ in range(count):
        _tag, position = _uvarint(frame, position)
        size, position = _uvarint(frame, position)
        position = _need(frame, position, size)
    return position


@cache
def _entity_skipper(entity_type: type) -> Skip | int:
    """A skipper for `entity_type`, or its size in bytes if every field has a fixed size (then arrays of it
    are checked in one step). Runs of fixed-size fields are checked in one step too."""
    compact = entity_type.__flexible__
    skippers: list[Skip] = []
    fixed_run = 0
    for field in fields(entity_type):
        if get_field_tag(field) is not None:
            continue  # inside the tagged-field section, skipped by size
        kind = classify_field(field)
        size = None
        if isinstance(kind, EntityField):
            inner = _entity_skipper(kind.type_)
            if is_optional(field):
                skipper = _nullable(_fixed(inner) if isinstance(inner, int) else inner)
            elif isinstance(inner, int):
                size = inner
            else:
                skipper = inner
        elif isinstance(kind, EntityTupleField):
            skipper = _array_skipper(_entity_skipper(kind.type_), compact)
        else:
            kafka_type = get_schema_field_type(field)
            element = _FIXED_SIZES.get(kafka_type)
            if isinstance(kind, PrimitiveTupleField):
                skipper = _array_skipper(element if element is not None else _variable_skipper(kafka_type, compact),
                                         compact)
            elif element is not None:
                size = element
            else:
                skipper = _variable_skipper(kafka_type, compact)
        if size is not None:
            fixed_run += size
            continue
        if fixed_run:
            skippers.append(_fixed(fixed_run))
            fixed_run = 0
        skippers.append(skipper)
    if not skippers and not compact:
        return fixed_run
    if fixed_run:
        skippers.append(_fixed(fixed_run))
    if compact:
        skippers.append(skip_tagged_fields)

    def skip(frame: bytes, position: int) -> int:
        for skipper in skippers:
            position = skipper(frame, position)
        return position
    return skip
