"""Metadata domain errors; `kafka_error` is the Kafka error NAME a handler puts on the wire."""

from brokerd.errors import BrokerError


class MetadataError(BrokerError):
    """A metadata read or change failed; `kafka_error` says why."""


class UnknownTopicError(MetadataError):
    """No topic has this name (or the partition index is past its partitions)."""

    kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


class TopicExistsError(MetadataError):
    """CreateTopics of a name that is taken."""

    kafka_error = "TOPIC_ALREADY_EXISTS"


class InvalidTopicError(MetadataError):
    """A topic name Kafka does not allow (`kafkaspec.topic_names`)."""

    kafka_error = "INVALID_TOPIC_EXCEPTION"


class InvalidPartitionsError(MetadataError):
    """A partition count below 1, or CreatePartitions that would not grow the topic."""

    kafka_error = "INVALID_PARTITIONS"


class InvalidReplicationFactorError(MetadataError):
    """A replication factor below 1 or above the brokers that are alive."""

    kafka_error = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignmentError(MetadataError):
    """A replica assignment naming unknown brokers, repeating one, or of uneven sizes."""

    kafka_error = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfigError(MetadataError):
    """A topic config name or value `kafkaspec.topic_config` refuses."""

    kafka_error = "INVALID_CONFIG"


class ControlPlaneError(MetadataError):
    """The control plane refused a request; `kafka_error` is the Kafka error name it gave."""

    def __init__(self, kafka_error: str | None, message: str) -> None:
        super().__init__(message)
        self.kafka_error = kafka_error or "UNKNOWN_SERVER_ERROR"


class ControlPlaneUnavailableError(MetadataError):
    """The control plane did not answer; the client should retry."""

    kafka_error = "REQUEST_TIMED_OUT"


class HttpError(OSError):
    """An HTTP request to the control plane could not be completed (connection refused, reset, timeout,
    malformed answer). Transport-level: the store retries or turns it into ControlPlaneUnavailableError."""
