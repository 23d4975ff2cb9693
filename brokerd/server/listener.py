"""Listening sockets, the connection registry, idle-connection reaping and graceful shutdown.

Shutdown order: stop accepting; ask every connection to finish the requests it already received
(`KafkaConnection.shutdown`); wait up to `shutdown_timeout_s`; abort whatever is left.
Idle connections (no request for `connections.max.idle.ms`) are closed by a reaper task.
"""

import asyncio
import contextlib
import logging

from brokerd.config import Listener
from brokerd.server.connection import KafkaConnection
from brokerd.server.dispatcher import Dispatcher

log = logging.getLogger(__name__)


class KafkaListener:
    """`bind` (sockets open, not accepting: ports known), then `serve`, then `stop`."""

    def __init__(self, max_frame_bytes: int, idle_timeout_ms: int) -> None:
        self._dispatcher: Dispatcher | None = None
        self._max_frame_bytes = max_frame_bytes
        self._idle_timeout_s = idle_timeout_ms / 1000
        self._servers: list[asyncio.Server] = []
        self._connections: set[KafkaConnection] = set()
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
        connection = KafkaConnection(self._dispatcher, self._max_frame_bytes, self._connections.discard)
        self._connections.add(connection)
        return connection

    async def _reap_idle(self) -> None:
        loop = asyncio.get_running_loop()
        interval = min(max(self._idle_timeout_s / 10, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            deadline = loop.time() - self._idle_timeout_s
            for connection in list(self._connections):
                if connection.idle and connection.last_active < deadline:
                    connection.close()

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
