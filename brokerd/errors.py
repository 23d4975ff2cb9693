"""Domain exceptions of the broker. Each names the Kafka error it maps to in `kafka_error`.

No wire codes here: the network handlers translate `kafka_error` names into codes at the boundary
(Redpanda's `map_produce_error_code`). Storage and replication raise these and nothing else for
conditions a client should see.
"""


class BrokerError(Exception):
    """Base class. `kafka_error` is the name of the Kafka error (`Errors.java`) a client receives."""

    kafka_error: str = "UNKNOWN_SERVER_ERROR"
    record_index: int | None = None
    """The position inside its batch of the record that broke a record-level rule, when one did
    (Produce v8+ reports it in `record_errors`)."""


class CorruptRecordError(BrokerError):
    """A record batch failed its CRC or its framing (sizes) is inconsistent."""

    kafka_error = "CORRUPT_MESSAGE"


class InvalidRecordError(BrokerError):
    """A well-formed batch breaks a rule of the log (magic, counts, offsets, keys on compacted topics)."""

    kafka_error = "INVALID_RECORD"


class MessageTooLargeError(BrokerError):
    """A batch is larger than the topic's `max.message.bytes`."""

    kafka_error = "MESSAGE_TOO_LARGE"


class RecordListTooLargeError(BrokerError):
    """The batches of one append exceed `segment.bytes` and could never fit in a segment."""

    kafka_error = "RECORD_LIST_TOO_LARGE"


class InvalidTimestampError(BrokerError):
    """A CreateTime timestamp is outside `message.timestamp.before/after.max.ms`."""

    kafka_error = "INVALID_TIMESTAMP"


class UnsupportedCompressionTypeError(BrokerError):
    """The batch names a compression codec this broker cannot decode."""

    kafka_error = "UNSUPPORTED_COMPRESSION_TYPE"


class OffsetOutOfRangeError(BrokerError):
    """A fetch or truncation offset is outside `[log_start_offset, log_end_offset]`."""

    kafka_error = "OFFSET_OUT_OF_RANGE"


class KafkaStorageError(BrokerError):
    """A disk failed (I/O error, full disk) or its directory is offline; the log was left unchanged."""

    kafka_error = "KAFKA_STORAGE_ERROR"


class UnknownTopicOrPartitionError(BrokerError):
    """This broker holds no log for the partition."""

    kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


class CorruptIndexError(BrokerError):
    """An index file failed its sanity check. Internal: the log rebuilds the index and carries on."""

    kafka_error = "KAFKA_STORAGE_ERROR"
