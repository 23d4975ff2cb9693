"""A well-formed response carrying one error, for any kio response type (Kafka's `getErrorResponse`).

Every field gets its zero value (0, "", False, (), None, nested entities likewise), and every
`error_code` field gets the error. Only meaningful for responses with a top-level `error_code`
(ApiVersions, InitProducerId, group APIs, DescribeCluster, ...); see `has_top_level_error`.
"""

import dataclasses
import datetime
import types
import typing
from functools import cache

from kio.schema.errors import ErrorCode


@cache
def _field_types(entity_type: type) -> dict[str, object]:
    return typing.get_type_hints(entity_type)


def has_top_level_error(response_type: type) -> bool:
    return "error_code" in _field_types(response_type)


def build_error_response(entity_type: type, error: ErrorCode) -> object:
    hints = _field_types(entity_type)
    values = {}
    for item in dataclasses.fields(entity_type):
        if item.name == "error_code":
            values[item.name] = error
        elif item.default is not dataclasses.MISSING:
            continue
        else:
            values[item.name] = _zero(hints[item.name], error)
    return entity_type(**values)


@cache
def zero_values(entity_type: type) -> dict[str, object]:
    """The zero value of every field of `entity_type` that has no default (errors: NONE)."""
    hints = _field_types(entity_type)
    return {item.name: _zero(hints[item.name], ErrorCode.none) for item in dataclasses.fields(entity_type)
            if item.default is dataclasses.MISSING}


def _zero(kind: object, error: ErrorCode) -> object:
    origin = typing.get_origin(kind)
    if origin is tuple:
        return ()
    if origin in (typing.Union, types.UnionType):
        return None
    if dataclasses.is_dataclass(kind):
        return build_error_response(kind, error)  # type: ignore[arg-type]
    if isinstance(kind, type):
        if issubclass(kind, ErrorCode):
            return error
        if issubclass(kind, bool):
            return False
        if issubclass(kind, int):
            return kind(0)
        if issubclass(kind, str):
            return ""
        if issubclass(kind, bytes):
            return b""
        if issubclass(kind, datetime.timedelta):
            return datetime.timedelta(0)
    raise TypeError(f"no zero value for {kind!r}")
