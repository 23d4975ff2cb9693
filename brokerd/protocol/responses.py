"""Version-agnostic response building: handlers describe an answer once, every version keeps its fields.

`MessageSchema(response_type)` exposes the kio entity classes of one response version by their Kafka
struct names (`schema.MetadataResponseTopic(...)`; a request version works the same way, as tests use
it). A handler passes the values of the fields it decides; each class
keeps the fields its version has and drops the rest, and a field the handler does not pass takes kio's
default (tagged fields, fields with a JSON default) or else its zero value (0, "", empty array, null,
the zero UUID), as Kafka's generated message classes start out. So an error answer names the error and
the request's keys, and every other field is well-formed.

    schema = MessageSchema(load_response_schema(ApiKey.METADATA, 1))
    schema.MetadataResponseTopic(error_code=..., name="t", topic_id=uuid, ...)  # v1 drops topic_id

Where versions differ in meaning, not only in fields, the handler branches on the version explicitly.
"""

import dataclasses
import sys
from collections.abc import Callable
from functools import cache

from brokerd.protocol.error_response import zero_values


class _EntityBuilder:
    """Builds one kio entity class from keyword values, dropping those the class has no field for and
    giving fields without a default their zero value when not passed."""

    __slots__ = ("entity_type", "fields", "zeros")

    def __init__(self, entity_type: type) -> None:
        self.entity_type = entity_type
        self.fields = frozenset(f.name for f in dataclasses.fields(entity_type))
        self.zeros = zero_values(entity_type)

    def __call__(self, **values: object) -> object:
        if not values.keys() <= self.fields:
            values = {name: value for name, value in values.items() if name in self.fields}
        if not self.zeros.keys() <= values.keys():
            values = {**self.zeros, **values}
        return self.entity_type(**values)


class MessageSchema:
    """The entity classes of one kio message version, by name; see the module docstring."""

    def __init__(self, message_type: type) -> None:
        module = sys.modules[message_type.__module__]
        self.version: int = int(message_type.__version__)
        self.flexible: bool = bool(message_type.__flexible__)
        self._builders = {
            name: _EntityBuilder(value) for name, value in vars(module).items()
            if dataclasses.is_dataclass(value) and isinstance(value, type) and value.__module__ == module.__name__
        }
        self.__dict__.update(self._builders)  # plain attribute lookups: `schema.Name` costs no __getattr__

    def __getattr__(self, name: str) -> Callable[..., object]:
        """Only reached for a name this version lacks."""
        raise AttributeError(f"v{self.version} has no entity {name}")

    def has(self, entity: str, field: str) -> bool:
        """Whether this version's `entity` exists and has `field` (e.g. to skip work a version discards)."""
        builder = self._builders.get(entity)
        return builder is not None and field in builder.fields


@cache
def response_schema(response_type: type) -> MessageSchema:
    return MessageSchema(response_type)
