"""Kafka's `authorized_operations` bit sets (AclOperation codes as bits). Strom has no authorizer, so, as
Kafka without one, every operation a resource type supports is allowed."""

from kio.static.primitive import i32

NOT_REQUESTED = i32(-(2**31))
"""The value when the request did not ask for authorized operations (Kafka's Integer.MIN_VALUE)."""

_READ, _WRITE, _CREATE, _DELETE, _ALTER, _DESCRIBE, _CLUSTER_ACTION = 3, 4, 5, 6, 7, 8, 9
_DESCRIBE_CONFIGS, _ALTER_CONFIGS, _IDEMPOTENT_WRITE = 10, 11, 12


def _bits(*operations: int) -> i32:
    return i32(sum(1 << op for op in operations))


TOPIC_OPERATIONS = _bits(_READ, _WRITE, _CREATE, _DELETE, _ALTER, _DESCRIBE, _DESCRIBE_CONFIGS, _ALTER_CONFIGS)
GROUP_OPERATIONS = _bits(_READ, _DELETE, _DESCRIBE)
CLUSTER_OPERATIONS = _bits(_CREATE, _ALTER, _DESCRIBE, _CLUSTER_ACTION, _DESCRIBE_CONFIGS, _ALTER_CONFIGS,
                           _IDEMPOTENT_WRITE)


def authorized(requested: bool, operations: i32) -> i32:
    return operations if requested else NOT_REQUESTED
