"""Errors of the record formats (a batch's framing, CRC, magic, codec, counts)."""

from brokerd.errors import BrokerError


class CorruptRecordError(BrokerError):
    """A record batch failed its CRC or its framing (sizes) is inconsistent."""

    kafka_error = "CORRUPT_MESSAGE"


class InvalidRecordError(BrokerError):
    """A well-formed batch breaks a rule of the log (magic, counts, offsets, keys on compacted topics)."""

    kafka_error = "INVALID_RECORD"


class UnsupportedCompressionTypeError(BrokerError):
    """The batch names a compression codec this broker cannot decode."""

    kafka_error = "UNSUPPORTED_COMPRESSION_TYPE"
