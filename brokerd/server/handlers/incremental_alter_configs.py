"""IncrementalAlterConfigs v0-v1: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3, list configs only)
applied to a topic's current overrides. Broker configs are static."""

import datetime
from collections.abc import Mapping

from brokerd.metadata.errors import InvalidConfigError, UnknownTopicError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._configs import alter_topic_configs
from kafkaspec import topic_config

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def apply_operations(current: Mapping[str, str], operations: tuple, broker_properties: Mapping[str, str]
                     ) -> dict[str, str]:
    """The new overrides after `operations` (kio AlterableConfig entries). Raises InvalidConfigError."""
    overrides = dict(current)
    for operation in operations:
        name, value = operation.name, operation.value
        definition = topic_config.TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if operation.config_operation == SET:
            if value is None:
                raise InvalidConfigError(f"Null value not supported for: {name}")
            overrides[name] = value
        elif operation.config_operation == DELETE:
            overrides.pop(name, None)
        elif operation.config_operation in (APPEND, SUBTRACT):
            if definition.type is not topic_config.ConfigType.LIST:
                raise InvalidConfigError(f"Config {name} is not a list; APPEND/SUBTRACT need a list config")
            effective = topic_config.resolve(overrides, topic_config.broker_defaults(broker_properties))[name]
            items = list(effective)  # type: ignore[arg-type]
            changes = [v.strip() for v in (value or "").split(",") if v.strip()]
            if operation.config_operation == APPEND:
                items += [v for v in changes if v not in items]
            else:
                items = [v for v in items if v not in changes]
            overrides[name] = ",".join(items)
        else:
            raise InvalidConfigError(f"Unknown config operation {operation.config_operation}")
    return overrides


async def handle(request, context: RequestContext) -> object:
    services = context.services

    def new_overrides(resource) -> dict[str, str]:
        topic = services.metadata.image.topics.get(resource.resource_name)
        if topic is None:
            raise UnknownTopicError(f"Topic {resource.resource_name} not found")
        return apply_operations(topic.configs, resource.configs, services.config.properties)

    responses = await alter_topic_configs(context, request.resources, request.validate_only, new_overrides)
    return context.response.IncrementalAlterConfigsResponse(throttle_time=datetime.timedelta(0), responses=responses)
