"""FindCoordinator v1: the broker coordinating a group (the leader of its `__consumer_offsets` partition,
the topic being created on first use). Transactions are not supported: their coordinator is never available."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v1.response import FindCoordinatorResponse
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from brokerd.groups.errors import GroupError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error

_NO_THROTTLE = datetime.timedelta(0)
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _error(code: ErrorCode, message: str | None) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(throttle_time=_NO_THROTTLE, error_code=code, error_message=message,
                                   node_id=BrokerId(-1), host="", port=i32(-1))


async def handle(request: FindCoordinatorRequest, context: RequestContext) -> FindCoordinatorResponse:
    if request.key_type == TRANSACTION_KEY_TYPE:
        return _error(ErrorCode.coordinator_not_available, "Strom has no transaction coordinator")
    if request.key_type != GROUP_KEY_TYPE:
        return _error(ErrorCode.invalid_request, f"unknown coordinator key type {request.key_type}")
    try:
        broker = await context.services.groups.find_coordinator(request.key)
    except GroupError as exc:
        return _error(*to_error(exc))
    return FindCoordinatorResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                                   node_id=BrokerId(broker.node_id), host=broker.host, port=i32(broker.port))
