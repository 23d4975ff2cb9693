"""Errors of the commit log: appends the log's configs refuse, reads outside it, failed disks."""

from brokerd.errors import BrokerError


class MessageTooLargeError(BrokerError):
    """A batch is larger than the topic's `max.message.bytes`."""

    kafka_error = "MESSAGE_TOO_LARGE"


class RecordListTooLargeError(BrokerError):
    """The batches of one append exceed `segment.bytes` and could never fit in a segment."""

    kafka_error = "RECORD_LIST_TOO_LARGE"


class InvalidTimestampError(BrokerError):
    """A CreateTime timestamp is outside `message.timestamp.before/after.max.ms`."""

    kafka_error = "INVALID_TIMESTAMP"


class OffsetOutOfRangeError(BrokerError):
    """A fetch or truncation offset is outside `[log_start_offset, log_end_offset]`."""

    kafka_error = "OFFSET_OUT_OF_RANGE"


class KafkaStorageError(BrokerError):
    """A disk failed (I/O error, full disk) or its directory is offline; the log was left unchanged."""

    kafka_error = "KAFKA_STORAGE_ERROR"


class CorruptIndexError(BrokerError):
    """An index file failed its sanity check. Internal: the log rebuilds the index and carries on."""

    kafka_error = "KAFKA_STORAGE_ERROR"
