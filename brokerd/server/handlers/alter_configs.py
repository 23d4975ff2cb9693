"""AlterConfigs v0-v2: replace a topic's overrides with exactly the given set (null values dropped).
Broker configs are static (server.properties / --override) and cannot be altered."""

import datetime

from kio.schema.errors import ErrorCode

from brokerd.server.context import RequestContext
from brokerd.server.handlers._configs import TOPIC_RESOURCE
from brokerd.server.handlers._errors import to_error


async def handle(request, context: RequestContext) -> object:
    metadata = context.services.metadata
    responses = []
    for resource in request.resources:
        error, message = ErrorCode.none, None
        if resource.resource_type != TOPIC_RESOURCE:
            error, message = ErrorCode.invalid_request, "Only topic configs can be altered; broker configs are static"
        else:
            overrides = {c.name: c.value for c in resource.configs if c.value is not None}
            try:
                await metadata.set_topic_configs(resource.resource_name, overrides,
                                                 validate_only=request.validate_only, origin=context.origin)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this resource
                error, message = to_error(exc)
        responses.append(context.response.AlterConfigsResourceResponse(error_code=error, error_message=message,
                                                      resource_type=resource.resource_type,
                                                      resource_name=resource.resource_name))
    return context.response.AlterConfigsResponse(throttle_time=datetime.timedelta(0), responses=tuple(responses))
