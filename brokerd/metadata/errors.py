"""Metadata domain errors; `kafka_error` is the Kafka error NAME a handler puts on the wire."""

from brokerd.errors import BrokerError


class MetadataError(BrokerError):
    """A metadata read or change failed; `kafka_error` says why."""


class UnknownTopicError(MetadataError):
    kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


class TopicExistsError(MetadataError):
    kafka_error = "TOPIC_ALREADY_EXISTS"


class InvalidTopicError(MetadataError):
    kafka_error = "INVALID_TOPIC_EXCEPTION"


class InvalidPartitionsError(MetadataError):
    kafka_error = "INVALID_PARTITIONS"


class InvalidReplicationFactorError(MetadataError):
    kafka_error = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignmentError(MetadataError):
    kafka_error = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfigError(MetadataError):
    kafka_error = "INVALID_CONFIG"


class PolicyViolationError(MetadataError):
    kafka_error = "POLICY_VIOLATION"


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
