"""Partition-layer domain errors beyond `brokerd.errors`; `kafka_error` is the Kafka error NAME."""

from brokerd.errors import BrokerError


class NotLeaderOrFollowerError(BrokerError):
    kafka_error = "NOT_LEADER_OR_FOLLOWER"
