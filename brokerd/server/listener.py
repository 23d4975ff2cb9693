"""Listening sockets, the connection registry, idle-connection reaping and graceful shutdown.

Shutdown order: stop accepting; ask every connection to finish the requests it already received
(`KafkaConnection.shutdown`); wait up to `shutdown_timeout_s`; abort whatever is left.
Idle connections (no request completed and no response drained for `connections.max.idle.ms`) are closed
by a reaper task. Connection limits as Kafka's `ConnectionQuotas`: a connection from an address already
holding `max.connections.per.ip` (or its override) is closed as soon as it is accepted, before any byte is
read; so is one beyond `max.connections` (Kafka instead leaves it in the accept backlog until a slot frees:
asyncio's server cannot pause accepting, and a closed connection costs the broker nothing either way).
"""

import asyncio
import contextlib
import logging

from brokerd.config import ConnectionLimits, Listener
from brokerd.server.connection import KafkaConnection
from brokerd.server.dispatcher import Dispatcher

log = logging.getLogger(__name__)


class KafkaListener:
    """`bind` (sockets open, not accepting: ports known), then `serve`, then `stop`."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self._dispatcher: Dispatcher | None = None
        self._limits = limits
        self._idle_timeout_s = limits.max_idle_ms / 1000
        self._servers: list[asyncio.Server] = []
        self._connections: set[KafkaConnection] = set()
        self._per_host: dict[str, int] = {}
        """Admitted connections per client address (the keys of `max.connections.per.ip`)."""
        self._reaper: asyncio.Task[None] | None = None

    @property
    def connection_count(self) -> int:
        """Client connections open now."""
        return len(self._connections)

    @property
    def bound_ports(self) -> list[int]:
        return [sock.getsockname()[1] for server in self._servers for sock in server.sockets]

    async def bind(self, listeners: tuple[Listener, ...]) -> None:
        loop = asyncio.get_running_loop()
        for listener in listeners:
            server = await loop.create_server(self._new_connection, listener.host or None, listener.port,
                                              reuse_address=True, backlog=1024, start_serving=False)
            self._servers.append(server)

    async def serve(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher
        for server in self._servers:
            await server.start_serving()
        self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())

    def _new_connection(self) -> KafkaConnection:
        assert self._dispatcher is not None, "serve() first"
        return KafkaConnection(self._dispatcher, self._limits.request_max_bytes, self._admit, self._closed)

    def _admit(self, connection: KafkaConnection, host: str) -> bool:
        """Count `connection` in, or refuse it (False: the connection closes itself) over a limit."""
        held = self._per_host.get(host, 0)
        if held >= self._limits.per_ip_limit(host):
            reason = f"{host} already holds max.connections.per.ip={self._limits.per_ip_limit(host)}"
        elif len(self._connections) >= self._limits.max_connections:
            reason = f"the broker holds max.connections={self._limits.max_connections}"
        else:
            self._per_host[host] = held + 1
            self._connections.add(connection)
            return True
        log.info("refused a connection from %s: %s", host, reason)
        return False

    def _closed(self, connection: KafkaConnection, host: str) -> None:
        if connection not in self._connections:
            return
        self._connections.discard(connection)
        held = self._per_host.pop(host) - 1
        if held:
            self._per_host[host] = held

    async def _reap_idle(self) -> None:
        loop = asyncio.get_running_loop()
        interval = min(max(self._idle_timeout_s / 10, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            deadline = loop.time() - self._idle_timeout_s
            for connection in list(self._connections):
                if connection.idle and connection.last_active < deadline:
                    connection.close_idle()

    async def stop(self, shutdown_timeout_s: float) -> None:
        for server in self._servers:
            server.close()
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        connections = list(self._connections)
        if connections:
            _done, pending = await asyncio.wait(
                [asyncio.ensure_future(c.shutdown()) for c in connections], timeout=shutdown_timeout_s
            )
            for task in pending:
                task.cancel()
        for connection in list(self._connections):
            connection.close()
        for server in self._servers:
            await server.wait_closed()
