"""The one exception type service functions raise: a Kafka error name, a message and an HTTP status.

Service modules (`cluster.services`, `topics.services`, `controller.election`) raise `KafkaApiError`; the
internal API answers it as `{"error": NAME, "message": …}` with `status`, so a broker can hand the same Kafka
error to its client, and the REST API and management commands show it as is.
"""

__all__ = ("KafkaApiError",)

# Errors that mean "your view of the cluster is out of date" (fencing) or "it exists already": 409.
_CONFLICTS = frozenset({
    "STALE_BROKER_EPOCH", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "TOPIC_ALREADY_EXISTS",
    "NOT_CONTROLLER", "INELIGIBLE_REPLICA",
})
_NOT_FOUND = frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "BROKER_ID_NOT_REGISTERED"})


class KafkaApiError(Exception):
    """A request Kafka would refuse with the error `error` (e.g. "INVALID_REPLICATION_FACTOR")."""

    def __init__(self, error: str, message: str, status: int | None = None):
        super().__init__(message)
        self.error = error
        self.message = message
        self.status = status or (409 if error in _CONFLICTS else 404 if error in _NOT_FOUND else 400)

    def as_json(self) -> dict[str, str]:
        return {"error": self.error, "message": self.message}
