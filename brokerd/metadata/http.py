"""A tiny asyncio HTTP/1.1 JSON client for the control plane's internal API (stdlib only).

One connection per request (`Connection: close`): requests are rare (heartbeats, admin calls, one
metadata long poll at a time), so keep-alive would buy nothing but state. Bodies are JSON both ways;
the response body is read to `Content-Length`, chunked, or EOF. Event loop only.
"""

import asyncio
import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from brokerd.metadata.errors import HttpError


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: object
    """The decoded JSON body, or None when empty."""


class JsonHttpClient:
    def __init__(self, base_url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"control plane URL must be http://host[:port][/prefix], got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.headers = dict(headers or {})

    async def request(self, method: str, path: str, body: object = None, timeout_s: float = 10.0,
                      headers: dict[str, str] | None = None) -> HttpResponse:
        """`headers` are added to the client's own for this request (values must be latin-1, without CR/LF)."""
        try:
            async with asyncio.timeout(timeout_s):
                return await self._request(method, path, body, headers or {})
        except TimeoutError:
            raise HttpError(f"{method} {path}: no answer within {timeout_s:.1f}s") from None
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            if isinstance(exc, HttpError):
                raise
            raise HttpError(f"{method} {path}: {exc}") from exc

    async def _request(self, method: str, path: str, body: object, headers: dict[str, str]) -> HttpResponse:
        payload = b"" if body is None else json.dumps(body).encode()
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Connection: close", "Accept: application/json"]
        lines += [f"{k}: {v}" for k, v in {**self.headers, **headers}.items()]
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        elif method in ("POST", "PUT", "PATCH"):
            lines.append("Content-Length: 0")
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
            await writer.drain()
            status_line = await reader.readline()
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
            if "content-length" in headers:
                raw = await reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                raw = await _read_chunked(reader)
            else:
                raw = await reader.read()
        finally:
            writer.close()
        text = raw.strip()
        if not text:
            return HttpResponse(status, None)
        try:
            return HttpResponse(status, json.loads(text))
        except ValueError:
            return HttpResponse(status, {"error": None, "message": text[:500].decode(errors="replace")})


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readline()
