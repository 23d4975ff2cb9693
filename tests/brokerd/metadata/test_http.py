"""JsonHttpClient's kept-alive connections against a real HTTP/1.1 server on 127.0.0.1 (asyncio): reuse, and
every case where a connection must not be reused or a request must not be sent twice."""

import asyncio
import json

import pytest

from brokerd.metadata import http
from brokerd.metadata.errors import HttpError
from brokerd.metadata.http import JsonHttpClient


class Server:
    """Answers `{"n": <request number on its connection>}`. Paths: `/close` answers with `Connection: close`;
    `/slow` answers after 1 s; `/drop` reads the request and closes without answering when it is not the first
    on its connection (what a server closing an idle connection as a request arrives looks like); `/gone` closes
without answering every time."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._handlers.add(asyncio.current_task())
        served = 0
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                path = request_line.split()[1].decode()
                self.requests.append(path)
                served += 1
                if (path == "/drop" and served > 1) or path == "/gone":
                    return
                if path == "/slow":
                    await asyncio.sleep(1)
                body = json.dumps({"n": served}).encode()
                close = path == "/close"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             + (b"Connection: close\r\n" if close else b"")
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
                if close:
                    return
        finally:
            writer.close()


@pytest.fixture
def run():
    loop = asyncio.new_event_loop()
    yield loop.run_until_complete
    loop.close()


async def _with_server(scenario):
    server = Server()
    client = JsonHttpClient(await server.start())
    try:
        return await scenario(server, client)
    finally:
        client.close()
        await server.stop()


def test_sequential_requests_share_one_connection(run):
    async def scenario(server, client):
        bodies = [(await client.request(method, "/x", body)).body for method, body in
                  (("GET", None), ("POST", {"a": 1}), ("GET", None))]
        assert bodies == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert (server.connections, client.connections_opened) == (1, 1)

    run(_with_server(scenario))


def test_concurrent_requests_use_separate_connections_then_share_them(run):
    async def scenario(server, client):
        await asyncio.gather(client.request("GET", "/slow"), client.request("GET", "/slow"))
        assert server.connections == 2
        await asyncio.gather(client.request("GET", "/x"), client.request("GET", "/x"))
        assert server.connections == 2

    run(_with_server(scenario))


def test_a_connection_the_server_closes_is_not_reused(run):
    async def scenario(server, client):
        await client.request("GET", "/close")
        assert (await client.request("GET", "/x")).body == {"n": 1}
        assert server.connections == 2

    run(_with_server(scenario))


def test_an_idle_connection_past_the_reuse_window_is_not_reused(run, monkeypatch):
    monkeypatch.setattr(http, "IDLE_REUSE_S", 0.0)

    async def scenario(server, client):
        await client.request("GET", "/x")
        await client.request("GET", "/x")
        assert server.connections == 2

    run(_with_server(scenario))


def test_a_timed_out_request_closes_its_connection(run):
    async def scenario(server, client):
        with pytest.raises(HttpError, match="no answer within"):
            await client.request("GET", "/slow", timeout_s=0.2)
        assert (await client.request("GET", "/x")).body == {"n": 1}  # a new connection: its first request
        assert server.connections == 2

    run(_with_server(scenario))


def test_a_get_lost_on_a_reused_connection_is_retried_once_on_a_new_one(run):
    async def scenario(server, client):
        await client.request("GET", "/drop")
        assert (await client.request("GET", "/drop")).body == {"n": 1}
        assert server.requests == ["/drop", "/drop", "/drop"] and server.connections == 2

    run(_with_server(scenario))


def test_a_post_lost_on_a_reused_connection_is_not_sent_again(run):
    async def scenario(server, client):
        await client.request("POST", "/drop", {"a": 1})
        with pytest.raises(HttpError, match="closed before the answer"):
            await client.request("POST", "/drop", {"a": 2})
        assert server.requests == ["/drop", "/drop"]

    run(_with_server(scenario))


def test_an_idempotent_post_lost_on_a_reused_connection_is_retried_once_on_a_new_one(run):
    """The broker's heartbeat: a repeat changes nothing, and a lost one under load could get it fenced."""
    async def scenario(server, client):
        await client.request("POST", "/drop", {"a": 1}, idempotent=True)
        assert (await client.request("POST", "/drop", {"a": 2}, idempotent=True)).body == {"n": 1}
        assert server.requests == ["/drop", "/drop", "/drop"] and server.connections == 2

    run(_with_server(scenario))


def test_an_idempotent_request_is_retried_only_once(run):
    async def scenario(server, client):
        await client.request("GET", "/x")  # one pooled connection
        with pytest.raises(HttpError, match="closed before the answer"):
            await client.request("POST", "/gone", {"a": 1}, idempotent=True)
        assert server.requests == ["/x", "/gone", "/gone"]

    run(_with_server(scenario))


DOCUMENTS = [
    b"{}", b' { "a" : [ ] , "b":[1, {"x":[2]} ,3],\n"c": {"d":[1]}, "e": "[x]" } ', b'{"records":[{"t":1}]}',
    b"[1, 2]", b'"text"', b'{"a": null, "b": true, "c": -1.5e3, "d": "\\u00e9\\""}',
]
MALFORMED = [b'{"a":1', b'{"a" 1}', b'{"a":[1 2]}', b'{"a":[1,]}', b'{"a":1} x', b"{1:2}", b'{"a":1,}', b""]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_decode_yielding_decodes_as_json_loads(document):
    assert http.decode_yielding(document) == json.loads(document)


@pytest.mark.parametrize("document", MALFORMED)
def test_decode_yielding_refuses_what_json_loads_refuses(document):
    with pytest.raises(ValueError):
        json.loads(document)
    with pytest.raises(ValueError):
        http.decode_yielding(document)
