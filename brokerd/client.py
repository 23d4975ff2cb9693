"""`BrokerClient`: the broker's own client side of the Kafka protocol to another broker (or itself): one
connection, one request at a time, non-flexible request versions (header v1). Used by the metrics
publisher; a request that times out or fails closes the connection (a half-read response would
desynchronise it) and the next call reconnects. Event loop only.
"""

import asyncio
import struct

from brokerd.protocol.messages import MalformedRequestError, decode_response, encode_request

_SIZE = struct.Struct(">i")


class BrokerClient:
    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host = host
        self.port = port
        self._client_id = client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0

    async def request(self, api_key: int, version: int, request: object, timeout_s: float) -> object:
        """Send `request` and return the decoded response. Raises OSError, TimeoutError, EOFError,
        asyncio.IncompleteReadError or MalformedRequestError (then the connection is closed)."""
        try:
            async with asyncio.timeout(timeout_s):
                if self._writer is None:
                    self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
                assert self._reader is not None
                self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
                self._writer.write(encode_request(api_key, version, self._correlation_id, self._client_id, request))
                await self._writer.drain()
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
            correlation_id, response = decode_response(api_key, version, frame)
            if correlation_id != self._correlation_id:
                raise MalformedRequestError(f"correlation id {correlation_id}, expected {self._correlation_id}")
        except BaseException:
            self.close()
            raise
        return response

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
