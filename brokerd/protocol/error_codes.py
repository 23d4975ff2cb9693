"""Kafka error codes by their protocol NAME (`"CORRUPT_MESSAGE"` → 2), from kio's generated table.

Domain exceptions carry a `kafka_error` name; handlers turn that name into a wire code here, so the
storage and metadata layers never see numbers.
"""

from kio.schema.errors import ErrorCode


def error_code(name: str) -> ErrorCode:
    """The ErrorCode for a Kafka error name; unknown names map to UNKNOWN_SERVER_ERROR (-1)."""
    return ErrorCode.__members__.get(name.lower(), ErrorCode.unknown_server_error)


def error_code_of(exc: BaseException) -> ErrorCode:
    """The wire code for a domain exception (its `kafka_error` attribute), else UNKNOWN_SERVER_ERROR."""
    return error_code(getattr(exc, "kafka_error", "UNKNOWN_SERVER_ERROR"))


__all__ = ["ErrorCode", "error_code", "error_code_of"]
