"""Errors of the replication layer: a partition this broker does not hold or lead, leader epochs that do not
match, producer sequences out of order, and acks=all appends that did not reach enough replicas in time."""

from brokerd.errors import BrokerError


class UnknownTopicOrPartitionError(BrokerError):
    """This broker holds no log for the partition."""

    kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


class NotLeaderOrFollowerError(BrokerError):
    """This broker does not lead the partition (or, for a follower append, leads it), or leadership moved
    while an acks=all append waited."""

    kafka_error = "NOT_LEADER_OR_FOLLOWER"


class FencedLeaderEpochError(BrokerError):
    """The request's leader epoch is older than the partition's."""

    kafka_error = "FENCED_LEADER_EPOCH"


class UnknownLeaderEpochError(BrokerError):
    """The request's leader epoch is newer than the partition's (this broker has not seen it yet)."""

    kafka_error = "UNKNOWN_LEADER_EPOCH"


class NotEnoughReplicasError(BrokerError):
    """acks=all with an ISR smaller than `min.insync.replicas`: refused, nothing appended."""

    kafka_error = "NOT_ENOUGH_REPLICAS"


class NotEnoughReplicasAfterAppendError(BrokerError):
    """acks=all: appended and replicated, but the ISR shrank below `min.insync.replicas` meanwhile."""

    kafka_error = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


class RequestTimedOutError(BrokerError):
    """acks=all: the high watermark did not pass the batch within the request's timeout (the batch stays
    in the log and may still be replicated)."""

    kafka_error = "REQUEST_TIMED_OUT"


class OutOfOrderSequenceError(BrokerError):
    """An idempotent batch's base sequence does not follow the producer's last one."""

    kafka_error = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpochError(BrokerError):
    """An idempotent batch from an older epoch of its producer id (a fenced producer)."""

    kafka_error = "INVALID_PRODUCER_EPOCH"
