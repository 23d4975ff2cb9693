"""Metadata domain errors; `kafka_error` is the Kafka error NAME a handler puts on the wire."""


class MetadataError(Exception):
    kafka_error = "UNKNOWN_SERVER_ERROR"


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
