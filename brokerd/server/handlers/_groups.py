"""What the group handlers share: request units and the client address as Kafka reports it."""

import datetime

from brokerd.server.context import RequestContext


def milliseconds(value: datetime.timedelta) -> int:
    return round(value.total_seconds() * 1000)


def client_host(context: RequestContext) -> str:
    """Kafka shows a member's host as Java's `InetAddress.toString()`: "/127.0.0.1"."""
    return f"/{context.client_host}"
