"""A tiny asyncio HTTP/1.1 JSON client for the control plane's internal API (stdlib only).

Connections are kept alive and reused: every request with a `Connection: close` makes the server close it,
and gunicorn's gthread worker does that on its one main thread, lingering until this side closes too (RFC
9112 §9.6) — with a busy broker event loop that held every other request to the control plane up (at 10,000
partitions a metadata change took ~1 s to reach the brokers). Rules, so that reuse never loses a request:

* a connection goes back to the pool only after a whole response that did not say `Connection: close`
  (HTTP/1.1); a cancelled or failed request closes its connection;
* one idle longer than `IDLE_REUSE_S` is closed, not reused: gunicorn closes idle connections after its
  `--keep-alive` (2 s by default), and a request written while it does would be lost;
* a reused connection that ends before the first byte of the answer (the server closed it meanwhile) is
  retried once on a new connection for a GET, or for another method the caller declares idempotent (a
  broker's heartbeat: sending it twice changes nothing, and losing it under load could get the broker fenced);
  other requests raise `HttpError`, as any lost connection does (their callers already retry, conditionally:
  the control plane's writes check epochs).

Bodies are JSON both ways; the response body is read to `Content-Length`, chunked, or EOF, and decoded here
unless the caller asks for the bytes (`raw`: a large body is decoded on a worker thread by `decode_yielding`).
Event loop only (but `decode_yielding`).
"""

import asyncio
import json
import re
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from brokerd.metadata.errors import HttpError

IDLE_REUSE_S = 1.5
"""An idle kept-alive connection is reused for at most this long (below gunicorn's 2 s keep-alive)."""
MAX_IDLE_CONNECTIONS = 4
"""Idle connections kept for reuse; more (after a burst of concurrent requests) are closed."""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: object
    """The decoded JSON body, or None when empty; the bytes as received for a `raw` request."""


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0
    """time.monotonic() when it went back to the pool."""

    def usable(self, now: float) -> bool:
        return (now - self.idle_since < IDLE_REUSE_S and not self.reader.at_eof()
                and not self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class _ClosedBeforeAnswer(HttpError):
    """The connection ended before the first byte of the status line."""


class JsonHttpClient:
    def __init__(self, base_url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"control plane URL must be http://host[:port][/prefix], got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.headers = dict(headers or {})
        self._idle: list[_Connection] = []
        self.connections_opened = 0
        """Connections opened so far (tests and diagnostics: reuse keeps it low)."""

    async def request(self, method: str, path: str, body: object = None, timeout_s: float = 10.0,
                      headers: dict[str, str] | None = None, idempotent: bool = False, raw: bool = False
                      ) -> HttpResponse:
        """`headers` are added to the client's own for this request (values must be latin-1, without CR/LF).
        `idempotent`: the request may be sent twice (GET always may), so one lost on a reused connection is
        retried once on a new one. `raw`: the answer's body is its bytes, not decoded."""
        try:
            async with asyncio.timeout(timeout_s):
                response = await self._request(method, path, body, headers or {}, idempotent or method == "GET")
                return response if raw else HttpResponse(response.status, decode_body(response.body))
        except TimeoutError:
            raise HttpError(f"{method} {path}: no answer within {timeout_s:.1f}s") from None
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            if isinstance(exc, HttpError):
                raise
            raise HttpError(f"{method} {path}: {exc}") from exc

    def close(self) -> None:
        """Close the idle connections (those in use close when their requests end)."""
        for connection in self._idle:
            connection.close()
        self._idle.clear()

    async def _request(self, method: str, path: str, body: object, headers: dict[str, str], idempotent: bool
                       ) -> HttpResponse:
        payload = b"" if body is None else json.dumps(body).encode()
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Accept: application/json"]
        lines += [f"{k}: {v}" for k, v in {**self.headers, **headers}.items()]
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        elif method in ("POST", "PUT", "PATCH"):
            lines.append("Content-Length: 0")
        message = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
        connection = self._reusable()
        if connection is not None:
            try:
                return await self._exchange(connection, message)
            except _ClosedBeforeAnswer:
                if not idempotent:
                    raise
        return await self._exchange(await self._open(), message)

    def _reusable(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    async def _open(self) -> _Connection:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.connections_opened += 1
        return _Connection(reader, writer)

    async def _exchange(self, connection: _Connection, message: bytes) -> HttpResponse:
        """One request and its response on `connection`, which goes back to the pool if it may be reused and
        is closed otherwise (also on any error or cancellation)."""
        keep = False
        try:
            reader, writer = connection.reader, connection.writer
            try:
                writer.write(message)
                await writer.drain()
                status_line = await reader.readline()
            except ConnectionError as exc:
                raise _ClosedBeforeAnswer(str(exc)) from exc
            if not status_line:
                raise _ClosedBeforeAnswer("connection closed before the answer")
            parts = status_line.decode("latin-1").split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/"):
                raise HttpError(f"malformed status line {status_line[:80]!r}")
            status = int(parts[1])
            headers: dict[str, str] = {}
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            keep = parts[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            if "content-length" in headers:
                raw = await reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                raw = await _read_chunked(reader)
            else:
                raw, keep = await reader.read(), False
        except BaseException:
            keep = False
            raise
        finally:
            if keep and len(self._idle) < MAX_IDLE_CONNECTIONS:
                connection.idle_since = time.monotonic()
                self._idle.append(connection)
            else:
                connection.close()
        return HttpResponse(status, raw)


def decode_body(raw: bytes) -> object:
    """A body's JSON (None when empty; an error's text as `{"error": None, "message"}` when not JSON)."""
    text = raw.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return {"error": None, "message": text[:500].decode(errors="replace")}


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def decode_yielding(raw: bytes) -> object:
    """`json.loads(raw)` of a JSON object, its members that are arrays decoded an element at a time: on a worker
    thread it gives the GIL away between elements (the event loop runs), where `json.loads` holds it throughout
    (a 4 MB metadata change: ~100 ms). Raises ValueError for malformed JSON."""
    text = raw.decode()
    index = _SPACE.match(text).end()
    if text[index:index + 1] != "{":
        return json.loads(text)
    decoded: dict[str, object] = {}
    index = _SPACE.match(text, index + 1).end()
    if text[index:index + 1] == "}":
        return _end(decoded, text, index + 1)
    while True:
        key, index = _DECODER.raw_decode(text, index)
        index = _SPACE.match(text, index).end()
        if not isinstance(key, str) or text[index:index + 1] != ":":
            raise ValueError(f"malformed JSON object at {index}")
        index = _SPACE.match(text, index + 1).end()
        if text[index:index + 1] == "[":
            decoded[key], index = _array(text, index + 1)
        else:
            decoded[key], index = _DECODER.raw_decode(text, index)
        index = _SPACE.match(text, index).end()
        if text[index:index + 1] == "}":
            return _end(decoded, text, index + 1)
        if text[index:index + 1] != ",":
            raise ValueError(f"malformed JSON object at {index}")
        index = _SPACE.match(text, index + 1).end()


def _array(text: str, index: int) -> tuple[list, int]:
    """The array whose first element (or "]") is at `index`, and where it ends."""
    elements: list = []
    index = _SPACE.match(text, index).end()
    if text[index:index + 1] == "]":
        return elements, index + 1
    while True:
        element, index = _DECODER.raw_decode(text, index)
        elements.append(element)
        index = _SPACE.match(text, index).end()
        if text[index:index + 1] == "]":
            return elements, index + 1
        if text[index:index + 1] != ",":
            raise ValueError(f"malformed JSON array at {index}")
        index = _SPACE.match(text, index + 1).end()


def _end(decoded: dict, text: str, index: int) -> dict:
    if _SPACE.match(text, index).end() != len(text):
        raise ValueError(f"extra data after the JSON object at {index}")
    return decoded


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readline()
