"""DescribeConfigs v0-v4: every topic config (override > broker default > Kafka default) or this broker's.

Per-version fields: v0 says `is_default` where v1+ says the config source and may list synonyms; v3+
answers each config's type and, when asked, its documentation.
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from brokerd.server.context import RequestContext
from brokerd.server.handlers._configs import (
    BROKER_RESOURCE,
    DEFAULT_CONFIG,
    TOPIC_RESOURCE,
    ConfigEntry,
    broker_config_entries,
    topic_config_entries,
)


def _result(context: RequestContext, resource: object, error: ErrorCode, message: str | None,
            entries: list[ConfigEntry], include_synonyms: bool, include_documentation: bool) -> object:
    schema = context.response
    keys = resource.configuration_keys  # type: ignore[attr-defined]
    wanted = None if keys is None else set(keys)  # null: all; empty: none (kafka-python relies on it)
    return schema.DescribeConfigsResult(
        error_code=error, error_message=message,
        resource_type=resource.resource_type, resource_name=resource.resource_name,  # type: ignore[attr-defined]
        configs=tuple(
            schema.DescribeConfigsResourceResult(
                name=e.name, value=e.value, read_only=False, config_source=i8(e.source),
                is_default=e.source == DEFAULT_CONFIG, is_sensitive=e.is_sensitive,
                config_type=i8(e.config_type), documentation=e.documentation if include_documentation else None,
                synonyms=tuple(schema.DescribeConfigsSynonym(name=n, value=v, source=i8(s)) for n, v, s in e.synonyms)
                if include_synonyms else (),
            )
            for e in entries if wanted is None or e.name in wanted
        ),
    )


async def handle(request, context: RequestContext) -> object:
    services = context.services
    results = []
    for resource in request.resources:
        entries: list[ConfigEntry] = []
        error, message = ErrorCode.none, None
        if resource.resource_type == TOPIC_RESOURCE:
            topic = services.metadata.image.topics.get(resource.resource_name)
            if topic is None:
                error, message = ErrorCode.unknown_topic_or_partition, f"Topic {resource.resource_name} not found"
            else:
                entries = topic_config_entries(topic.configs, services.config.properties)
        elif resource.resource_type == BROKER_RESOURCE:
            if resource.resource_name not in ("", str(services.config.node_id)):
                error, message = ErrorCode.invalid_request, f"Broker {resource.resource_name} is not this broker"
            else:
                entries = broker_config_entries(services.config)
        else:
            error, message = ErrorCode.invalid_request, f"Unsupported resource type {resource.resource_type}"
        results.append(_result(context, resource, error, message, entries, getattr(request, "include_synonyms", False),
                               getattr(request, "include_documentation", False)))
    return context.response.DescribeConfigsResponse(throttle_time=datetime.timedelta(0), results=tuple(results))
