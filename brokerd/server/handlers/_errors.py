"""Domain exception → (wire error code, message), the one place handlers translate errors.

Exceptions carrying a `kafka_error` name are expected outcomes; anything else is a bug, logged with its
traceback and reported as UNKNOWN_SERVER_ERROR for that item only.
"""

import logging
from collections.abc import Callable, Iterable
from typing import TypeVar

from kio.schema.errors import ErrorCode

from brokerd.protocol.error_codes import error_code

log = logging.getLogger("brokerd.server.handlers")
Item = TypeVar("Item")
Result = TypeVar("Result")


def to_error_code(exc: Exception) -> ErrorCode:
    name = getattr(exc, "kafka_error", None)
    if name is None:
        log.error("unexpected error", exc_info=exc)
        return ErrorCode.unknown_server_error
    return error_code(name)


def to_error(exc: Exception) -> tuple[ErrorCode, str | None]:
    """(code, message) for responses that carry an error message."""
    return to_error_code(exc), str(exc) or None


def answer_each(items: Iterable[Item], serve: Callable[[Item], Result],
                fail: Callable[[Item, ErrorCode], Result]) -> tuple[Result, ...]:
    """`serve(item)` for every item of a request; an error answers that item alone, with `fail(item, code)`."""
    results = []
    for item in items:
        try:
            results.append(serve(item))
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this item
            results.append(fail(item, to_error_code(exc)))
    return tuple(results)
