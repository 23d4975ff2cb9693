"""Shared by the DescribeConfigs/AlterConfigs/IncrementalAlterConfigs handlers: resource types, config
sources, the effective configs of a topic or of this broker with where each value comes from, and the
alteration loop both Alter handlers answer with."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from brokerd.config import BrokerConfig
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error
from kafkaspec import topic_config

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

STATIC_BROKER_CONFIGS = "Only topic configs can be altered; broker configs are static"

DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

UNKNOWN_TYPE = 0
_WIRE_TYPES = {topic_config.ConfigType.BOOLEAN: 1, topic_config.ConfigType.STRING: 2, topic_config.ConfigType.INT: 3,
               topic_config.ConfigType.LONG: 5, topic_config.ConfigType.DOUBLE: 6, topic_config.ConfigType.LIST: 7}
"""Kafka's ConfigType codes (DescribeConfigs v3+ `config_type`)."""


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    is_sensitive: bool
    synonyms: tuple[tuple[str, str | None, int], ...]
    """(name, value, source), most specific first, as Kafka's include_synonyms shows them."""
    config_type: int = UNKNOWN_TYPE
    documentation: str | None = None


def topic_config_entries(overrides: Mapping[str, str], broker_properties: Mapping[str, str]
                         ) -> list[ConfigEntry]:
    entries = []
    for name, definition in topic_config.TOPIC_CONFIGS.items():
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, definition.render(definition.parse(overrides[name])), DYNAMIC_TOPIC_CONFIG))
        if definition.broker_key and definition.broker_key in broker_properties:
            value = definition.render(definition.parse(broker_properties[definition.broker_key]))
            synonyms.append((definition.broker_key, value, STATIC_BROKER_CONFIG))
        synonyms.append((definition.broker_key or name, definition.render(definition.default), DEFAULT_CONFIG))
        _, value, source = synonyms[0]
        entries.append(ConfigEntry(name, value, source, False, tuple(synonyms), _WIRE_TYPES[definition.type],
                                   definition.doc))
    return entries


def broker_config_entries(config: BrokerConfig) -> list[ConfigEntry]:
    effective = {
        "node.id": str(config.node_id),
        "listeners": ",".join(f"{li.name}://{li.host}:{li.port}" for li in config.listeners),
        "advertised.listeners": ",".join(f"{li.name}://{li.host}:{li.port}" for li in config.advertised_listeners),
        "log.dirs": ",".join(str(d) for d in config.log_dirs),
        "num.partitions": str(config.num_partitions),
        "default.replication.factor": str(config.default_replication_factor),
        "auto.create.topics.enable": str(config.auto_create_topics_enable).lower(),
        "message.max.bytes": str(config.message_max_bytes),
        "socket.request.max.bytes": str(config.connections.request_max_bytes),
        "connections.max.idle.ms": str(config.connections.max_idle_ms),
        "max.connections": str(config.connections.max_connections),
        "max.connections.per.ip": str(config.connections.max_connections_per_ip),
    }
    effective.update(config.properties)
    entries = []
    for name in sorted(effective):
        sensitive = "password" in name or "secret" in name
        value = None if sensitive else effective[name]
        source = STATIC_BROKER_CONFIG if name in config.properties else DEFAULT_CONFIG
        entries.append(ConfigEntry(name, value, source, sensitive, ((name, value, source),)))
    return entries


async def alter_topic_configs(context: RequestContext, resources: tuple, validate_only: bool,
                              new_overrides: Callable[[object], dict[str, str]]) -> tuple:
    """Replace each topic resource's overrides with `new_overrides(resource)` (`validate_only`: checked, not
    applied), one AlterConfigsResourceResponse per resource. Broker configs are static: INVALID_REQUEST."""
    responses = []
    for resource in resources:
        error, message = ErrorCode.none, None
        try:
            if resource.resource_type != TOPIC_RESOURCE:
                error, message = ErrorCode.invalid_request, STATIC_BROKER_CONFIGS
            else:
                await context.services.metadata.set_topic_configs(resource.resource_name, new_overrides(resource),
                                                                  validate_only=validate_only, origin=context.origin)
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this resource
            error, message = to_error(exc)
        responses.append(context.response.AlterConfigsResourceResponse(
            error_code=error, error_message=message, resource_type=resource.resource_type,
            resource_name=resource.resource_name))
    return tuple(responses)
