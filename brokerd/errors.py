"""The base of the broker's domain exceptions: each names the Kafka error it maps to in `kafka_error`.

No wire codes here: the network handlers translate `kafka_error` names into codes at the boundary
(Redpanda's `map_produce_error_code`). Every layer raises its own subclasses (its package's `errors.py`:
`records`, `storage`, `replication`, `metadata`, `groups`) and nothing else for conditions a client
should see.
"""


class BrokerError(Exception):
    """Base class. `kafka_error` is the name of the Kafka error (`Errors.java`) a client receives."""

    kafka_error: str = "UNKNOWN_SERVER_ERROR"
    record_index: int | None = None
    """The position inside its batch of the record that broke a record-level rule, when one did
    (Produce v8+ reports it in `record_errors`)."""
