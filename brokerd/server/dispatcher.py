"""Frame → handler → wire response: header parsing, version checks, decoding, encoding.

Version policy (`brokerd.protocol.api_versions`): every version of an API's range is decoded with its
kio schema and handed to the API's one handler, with that version's `MessageSchema` in the context.
An ApiVersions version above the range gets a v0 body with UNSUPPORTED_VERSION and the full table
(KIP-511). Another version outside the range gets a well-formed error response of *that* version when kio
knows it and the API has a top-level error code; otherwise, like Kafka, the connection is closed
(`MalformedRequestError`). Unexpected handler failures are logged and answered the same way with
UNKNOWN_SERVER_ERROR. The first request of each (client id, API, version) is logged at INFO, so the
versions each client sends show in the broker's log (for at most `MAX_LOGGED_VERSIONS` combinations).

The kio schema of an (API, version) is loaded on its first request, in a worker thread: importing it
costs tens of milliseconds (hundreds on a loaded machine), which would stall every connection of the
loop; meanwhile only that request waits.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from kio.schema.errors import ErrorCode

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS, advertised_api_versions
from brokerd.protocol.error_response import build_error_response, has_top_level_error
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.messages import MessageCodec, frame_response, message_codec, parse_request_header, peek_api
from brokerd.protocol.responses import MessageSchema, response_schema
from brokerd.server.context import BrokerServices, RequestContext
from brokerd.server.response import NO_RESPONSE, Chunk, RawResponse

log = logging.getLogger(__name__)

MAX_LOGGED_VERSIONS = 10_000
Handler = Callable[[object, RequestContext], Awaitable[object]]
"""Returns a kio response entity, a RawResponse, or NO_RESPONSE."""


class Dispatcher:
    """Stateless per request; shared by every connection."""

    def __init__(self, services: BrokerServices, handlers: dict[int, Handler]) -> None:
        self._services = services
        self._handlers = handlers
        self._seen: set[tuple[str | None, int, int]] = set()
        """(client id, api_key, version) received so far, each logged once."""
        self._codecs: dict[tuple[int, int], tuple[MessageCodec, MessageSchema]] = {}
        """(api_key, version) → its codec and response schema, once loaded."""

    async def dispatch(self, frame: bytes, client_host: str, release: Callable[[], None] = lambda: None
                       ) -> list[Chunk] | None:
        """The size-prefixed response chunks for one request frame, or None if none is due. `release` is the
        handler's `RequestContext.release` (the connection may start the next request).
        Raises MalformedRequestError when the connection must be closed. Timed per API (`services.requests`)."""
        requests = self._services.requests
        if requests is None:
            return await self._dispatch(frame, client_host, release, [])
        started = time.perf_counter()
        api_key, api_version, _ = peek_api(frame)
        counted_as: list[str] = []
        try:
            return await self._dispatch(frame, client_host, release, counted_as)
        except MalformedRequestError:
            requests.failed(api_key)
            raise
        finally:
            requests.observe(api_key, api_version, time.perf_counter() - started, counted_as)

    async def _dispatch(self, frame: bytes, client_host: str, release: Callable[[], None],
                        counted_as: list[str]) -> list[Chunk] | None:
        api_key, api_version, correlation_id = peek_api(frame)
        supported = SUPPORTED_APIS.get(api_key)
        handler = self._handlers.get(api_key)
        if supported is None or handler is None:
            raise MalformedRequestError(f"unsupported API key {api_key}")
        if api_version not in supported:
            return self._unsupported_version(api_key, api_version, correlation_id)
        loaded = self._codecs.get((api_key, api_version))
        if loaded is None:
            loaded = self._codecs[api_key, api_version] = await asyncio.to_thread(_load_codec, api_key, api_version)
        codec, schema = loaded
        header, offset = parse_request_header(frame, codec.flexible)
        request = codec.decode_request(frame, offset)
        seen = (header.client_id, api_key, api_version)
        if seen not in self._seen and len(self._seen) < MAX_LOGGED_VERSIONS:
            self._seen.add(seen)
            log.info("first %s v%d request from client_id %r", ApiKey(api_key).name, api_version, header.client_id)
        context = RequestContext(self._services, header, client_host, schema, release, counted_as)
        try:
            response = await handler(request, context)
        except Exception:
            log.exception("handler for %s v%d failed", ApiKey(api_key).name, api_version)
            if self._services.requests is not None:
                self._services.requests.failed(api_key, context.counted_as)
            return self._error_response(api_key, api_version, correlation_id, ErrorCode.unknown_server_error)
        if response is NO_RESPONSE:
            return None
        if isinstance(response, RawResponse):
            return [frame_response(correlation_id, response.size), *response.chunks]
        return [codec.encode_response(correlation_id, response)]

    def _unsupported_version(self, api_key: int, api_version: int, correlation_id: int) -> list[Chunk]:
        if api_key == ApiKey.API_VERSIONS:
            return self._error_response(api_key, 0, correlation_id, ErrorCode.unsupported_version)
        return self._error_response(api_key, api_version, correlation_id, ErrorCode.unsupported_version)

    def _error_response(self, api_key: int, api_version: int, correlation_id: int,
                        error: ErrorCode) -> list[Chunk]:
        codec = message_codec(api_key, api_version)
        if codec is None or not has_top_level_error(codec.response_type):
            raise MalformedRequestError(
                f"{ApiKey(api_key).name} v{api_version}: {error.name}, and the response has no error field"
            )
        response = build_error_response(codec.response_type, error)
        if api_key == ApiKey.API_VERSIONS:
            response = type(response)(error_code=error, api_keys=advertised_api_versions())
        return [codec.encode_response(correlation_id, response)]


def _load_codec(api_key: int, version: int) -> tuple[MessageCodec, MessageSchema]:
    """The codec and response schema of a served (api_key, version); imports kio's modules (worker thread)."""
    codec = message_codec(api_key, version)
    assert codec is not None, f"kio lacks {api_key} v{version}"
    return codec, response_schema(codec.response_type)
