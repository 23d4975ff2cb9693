"""`BrokerClient`: the client side of the Kafka protocol over one TCP connection — framing, correlation ids,
timeouts — for the requests a broker sends itself (the replica fetcher's OffsetForLeaderEpoch, Fetch and
ListOffsets, the metrics publisher's Produce) and for anything else that needs a plain Kafka connection
(tests, tools).

One request at a time (a lock serialises callers; the fetcher never has two in flight), any version kio
knows (request header v1, or v2 for flexible versions; see `brokerd.protocol.messages`). The connection
opens on the first request. Any failure — refused, reset, timed out, a response for another correlation id,
one that does not decode or one nobody asked for — closes it, since a half-read response would leave the stream
out of step; the next request reconnects. Event loop only.

The connection is an `asyncio.Protocol` (`_ResponseReader`) whose `data_received` hands a complete response
frame straight to the waiting request's future, and a request's timeout is one timer (`brokerd.waits`): a replica
fetcher sends a request per round, so no stream reader buffers the bytes and wakes a reading task, and no
`asyncio.timeout` scope is entered and left per round.
"""

import asyncio
from collections.abc import Callable

from brokerd.protocol.errors import InvalidFrameError, MalformedRequestError
from brokerd.protocol.framing import FrameDecoder
from brokerd.protocol.messages import decode_response, encode_request, frame_request, response_correlation_id
from brokerd.waits import wait_resolved

CORRELATION_ID_MASK = 0x7FFFFFFF
"""Correlation ids count up from 1 and wrap before turning negative."""
MAX_RESPONSE_BYTES = 2**31 - 1
"""Any response the int32 size prefix can frame (a Fetch answer is bounded by the request's max_bytes)."""
TRANSPORT_ERRORS = (OSError, EOFError, asyncio.IncompleteReadError, MalformedRequestError, TimeoutError)
"""What a request raises when the connection failed (it is closed then): retry on a new one."""


class _ResponseReader(asyncio.Protocol):
    """Response frames (without their size prefix) to the one request waiting, in arrival order."""

    __slots__ = ("transport", "_decoder", "_waiter", "_failure")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._decoder = FrameDecoder(MAX_RESPONSE_BYTES)
        self._waiter: asyncio.Future[bytes] | None = None
        self._failure: BaseException | None = None
        """Why the connection is of no further use (lost, or out of step), once it is."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except InvalidFrameError as exc:
            self._fail(MalformedRequestError(f"response {exc}"))
            return
        for frame in frames:
            waiter = self._waiter
            if waiter is None or waiter.done():
                self._fail(MalformedRequestError("a response no request was waiting for"))
                return
            self._waiter = None
            waiter.set_result(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._fail(exc if exc is not None else EOFError("the broker closed the connection"))

    async def exchange(self, data: bytes, deadline: float) -> bytes:
        """Write `data` (one request frame) and return the next response frame; TimeoutError at `deadline`
        (loop time)."""
        if self._failure is not None:
            raise self._failure
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        self.transport.write(data)  # type: ignore[union-attr]
        if not await wait_resolved(waiter, deadline - loop.time()):
            raise TimeoutError("no response within the request's timeout")  # a late one finds the waiter done
        return waiter.result()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._fail(EOFError("the connection was closed"))

    def _fail(self, failure: BaseException) -> None:
        if self._failure is None:
            self._failure = failure
        if self.transport is not None and not isinstance(failure, EOFError):
            self.transport.abort()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(failure)


class BrokerClient:
    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._connection: _ResponseReader | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"BrokerClient({self.host}:{self.port}, {self.client_id!r})"

    @property
    def connection(self) -> object | None:
        """The open connection (an opaque token: the same object while it lasts), None between connections."""
        return self._connection

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
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            try:
                if self._connection is None:
                    async with asyncio.timeout_at(deadline):
                        _, self._connection = await loop.create_connection(_ResponseReader, self.host, self.port)
                self._correlation_id = (self._correlation_id + 1) & CORRELATION_ID_MASK
                frame = await self._connection.exchange(encode(self._correlation_id), deadline)
                answered = response_correlation_id(frame)
                if answered != self._correlation_id:
                    raise MalformedRequestError(f"correlation id {answered}, expected {self._correlation_id}")
            except BaseException:
                self.close()
                raise
            return frame

    def close(self) -> None:
        """Close the connection (if open); the next request opens a new one."""
        if self._connection is not None:
            self._connection.close()
        self._connection = None
