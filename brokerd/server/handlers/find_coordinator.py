"""FindCoordinator v0-v6: the broker coordinating a group (the leader of its `__consumer_offsets` partition,
the topic being created on first use). Transactions are not supported: their coordinator is never available.

v0 has no key type (always a group); v4+ asks for a batch of keys (`coordinator_keys`) and answers one
`Coordinator` entry per key instead of the top-level fields. Share groups (key type 2, v6) have no
coordinator here (INVALID_REQUEST, as a Kafka without share groups answers).
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error

_NO_THROTTLE = datetime.timedelta(0)
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
BATCHED_VERSION = 4


async def _find(key_type: int, key: str, context: RequestContext) -> tuple[ErrorCode, str | None, object]:
    """(error, message, coordinator broker or None)."""
    if key_type == TRANSACTION_KEY_TYPE:
        return ErrorCode.coordinator_not_available, "Strom has no transaction coordinator", None
    if key_type != GROUP_KEY_TYPE:
        return ErrorCode.invalid_request, f"unknown coordinator key type {key_type}", None
    try:
        return ErrorCode.none, None, await context.services.groups.find_coordinator(key)
    except GroupError as exc:
        return *to_error(exc), None


def _node(broker) -> dict[str, object]:
    if broker is None:
        return {"node_id": BrokerId(-1), "host": "", "port": i32(-1)}
    return {"node_id": BrokerId(broker.node_id), "host": broker.host, "port": i32(broker.port)}


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    if context.version >= BATCHED_VERSION:
        coordinators = []
        for key in request.coordinator_keys:
            error, message, broker = await _find(key_type, key, context)
            coordinators.append(schema.Coordinator(key=key, error_code=error, error_message=message, **_node(broker)))
        return schema.FindCoordinatorResponse(throttle_time=_NO_THROTTLE, coordinators=tuple(coordinators))
    error, message, broker = await _find(key_type, request.key, context)
    return schema.FindCoordinatorResponse(throttle_time=_NO_THROTTLE, error_code=error, error_message=message,
                                          **_node(broker))
