"""Kafka listener strings: `NAME://host:port[,NAME://host:port…]` (`listeners`, `advertised.listeners`)."""

import re
from dataclasses import dataclass

_LISTENER = re.compile(r"(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[0-9a-fA-F:.]+\]|[^:/\s]*):(?P<port>\d+)")


class InvalidListenerError(ValueError):
    """The listener string is not Kafka's `NAME://host:port` list."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(text: str) -> list[Endpoint]:
    """Parse a comma-separated listener list; names must be unique, ports 0-65535."""
    endpoints: list[Endpoint] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _LISTENER.fullmatch(item)
        if not match:
            raise InvalidListenerError(f"Invalid listener {item!r}: expected NAME://host:port")
        port = int(match["port"])
        if port > 65535:
            raise InvalidListenerError(f"Invalid listener {item!r}: port {port} is out of range")
        endpoints.append(Endpoint(match["name"].upper(), match["host"].strip("[]"), port))
    if not endpoints:
        raise InvalidListenerError("No listener given: expected NAME://host:port")
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise InvalidListenerError(f"Each listener must have a different name, got {names}")
    return endpoints
