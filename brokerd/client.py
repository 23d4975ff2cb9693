"""`BrokerClient`: the client side of the Kafka protocol over one TCP connection — framing, correlation ids,
timeouts — for the requests a broker sends itself (the replica fetcher's OffsetForLeaderEpoch, Fetch and
ListOffsets, the metrics publisher's Produce) and for anything else that needs a plain Kafka connection
(tests, tools).

One request at a time (a lock serialises callers; the fetcher never has two in flight), any version kio
knows (request header v1, or v2 for flexible versions; see `brokerd.protocol.messages`). The connection
opens on the first request. Any failure — refused, reset, timed out, a response for another correlation id
or one that does not decode — closes it, since a half-read response would leave the stream out of step;
the next request reconnects. Event loop only.
"""

import asyncio
from collections.abc import Callable

from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.framing import SIZE_PREFIX
from brokerd.protocol.messages import decode_response, encode_request, frame_request, response_correlation_id

CORRELATION_ID_MASK = 0x7FFFFFFF
"""Correlation ids count up from 1 and wrap before turning negative."""
TRANSPORT_ERRORS = (OSError, EOFError, asyncio.IncompleteReadError, MalformedRequestError, TimeoutError)
"""What a request raises when the connection failed (it is closed then): retry on a new one."""


class BrokerClient:
    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"BrokerClient({self.host}:{self.port}, {self.client_id!r})"

    async def request(self, api_key: int, version: int, request: object, timeout_s: float) -> object:
        """Send `request` (a kio request entity of `version`) and return the decoded response entity.
        Raises one of TRANSPORT_ERRORS (the connection is then closed)."""
        frame = await self.request_frame(api_key, version, request, timeout_s)
        try:
            return decode_response(api_key, version, frame)[1]
        except MalformedRequestError:
            self.close()
            raise

    async def request_frame(self, api_key: int, version: int, request: object, timeout_s: float) -> bytes:
        """Send `request` and return its response frame undecoded (without the size prefix, starting with
        the correlation id), for callers that lay responses out by hand. `timeout_s` bounds connecting,
        sending and receiving. Raises one of TRANSPORT_ERRORS."""
        return await self._exchange(lambda correlation_id: encode_request(
            api_key, version, correlation_id, self.client_id, request), timeout_s)

    async def request_body(self, api_key: int, version: int, body: bytes, timeout_s: float) -> bytes:
        """`request_frame` for a request body laid out by hand (the fetcher's Fetch,
        `brokerd.protocol.fetch_request`): the fetcher keeps fetched records a slice of the response frame."""
        return await self._exchange(lambda correlation_id: frame_request(
            api_key, version, correlation_id, self.client_id, body), timeout_s)

    async def _exchange(self, encode: Callable[[int], bytes], timeout_s: float) -> bytes:
        """Send the frame `encode(correlation_id)` and return the response frame."""
        async with self._lock:
            try:
                async with asyncio.timeout(timeout_s):
                    if self._writer is None:
                        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
                    assert self._reader is not None
                    self._correlation_id = (self._correlation_id + 1) & CORRELATION_ID_MASK
                    self._writer.write(encode(self._correlation_id))
                    await self._writer.drain()
                    (size,) = SIZE_PREFIX.unpack(await self._reader.readexactly(SIZE_PREFIX.size))
                    frame = await self._reader.readexactly(size)
                answered = response_correlation_id(frame)
                if answered != self._correlation_id:
                    raise MalformedRequestError(f"correlation id {answered}, expected {self._correlation_id}")
            except BaseException:
                self.close()
                raise
            return frame

    def close(self) -> None:
        """Close the connection (if open); the next request opens a new one."""
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
