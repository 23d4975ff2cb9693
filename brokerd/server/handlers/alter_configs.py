"""AlterConfigs v0-v2: replace a topic's overrides with exactly the given set (null values dropped).
Broker configs are static (server.properties / --override) and cannot be altered."""

import datetime

from brokerd.server.context import RequestContext
from brokerd.server.handlers._configs import alter_topic_configs


async def handle(request, context: RequestContext) -> object:
    responses = await alter_topic_configs(
        context, request.resources, request.validate_only,
        lambda resource: {c.name: c.value for c in resource.configs if c.value is not None})
    return context.response.AlterConfigsResponse(throttle_time=datetime.timedelta(0), responses=responses)
