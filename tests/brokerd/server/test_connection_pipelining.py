"""`server.connection` over a real loopback socket, with a scripted dispatcher in place of the broker's: a
request that releases the connection (an acks=all produce waiting for replication) lets the next request
start while it waits; answers still leave in request order; a request that does not release holds the next;
a request that fails closes its connection alone, cancelling the released requests behind it and dropping
the queued ones; when the client closes, every request it sent is still processed, in order (an acks=0
producer closes right after its last produce request)."""

import asyncio
import logging
import struct

import pytest

from brokerd.protocol.errors import MalformedRequestError
from brokerd.server.connection import KafkaConnection


class ScriptedDispatcher:
    """Frames are one byte naming the request; `waits[name]` holds it until set; `releases` release early;
    `failures[name]` is raised once the request's wait is over."""

    def __init__(self, releases: set[bytes], failures: dict[bytes, Exception] | None = None) -> None:
        self.releases = releases
        self.failures = failures or {}
        self.waits: dict[bytes, asyncio.Event] = {}
        self.started: list[bytes] = []
        self.events: list[str] = []

    async def dispatch(self, frame: bytes, client_host: str, release=lambda: None) -> list[bytes]:
        self.started.append(frame)
        self.events.append(f"start {frame.decode()}")
        if frame in self.releases:
            release()
        if frame in self.waits:
            try:
                await self.waits[frame].wait()
            except asyncio.CancelledError:
                self.events.append(f"cancelled {frame.decode()}")
                raise
        if frame in self.failures:
            raise self.failures[frame]
        self.events.append(f"end {frame.decode()}")
        return [struct.pack(">i", len(frame)) + frame]


async def serve(dispatcher: ScriptedDispatcher, on_close=lambda *_: None) -> asyncio.Server:
    """A loopback server of `KafkaConnection`s over `dispatcher`, admitting every connection."""
    return await asyncio.get_running_loop().create_server(
        lambda: KafkaConnection(dispatcher, 1 << 20, lambda *_: True, on_close), "127.0.0.1", 0)


def framed(*frames: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(frame)) + frame for frame in frames)


async def connect(server: asyncio.Server, frames: list[bytes]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A client connection to `server` that has sent `frames` pipelined."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    writer.write(framed(*frames))
    await writer.drain()
    return reader, writer


async def until(condition) -> None:
    async with asyncio.timeout(10):
        while not condition():
            await asyncio.sleep(0.01)


async def answer(reader: asyncio.StreamReader) -> bytes:
    async with asyncio.timeout(10):
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        return await reader.readexactly(size)


async def closed_unanswered(reader: asyncio.StreamReader) -> bool:
    """True if the server closed (or reset) the connection without sending another byte."""
    try:
        async with asyncio.timeout(10):
            return await reader.read() == b""
    except ConnectionResetError:
        return True


async def exchange(dispatcher: ScriptedDispatcher, frames: list[bytes], check) -> list[bytes]:
    """Send `frames` pipelined, run `check()` once every request that can start has started, then release all
    waits and return the answers in arrival order."""
    server = await serve(dispatcher)
    reader, writer = await connect(server, frames)
    await until(check)
    for event in dispatcher.waits.values():
        event.set()
    answers = [await answer(reader) for _ in frames]
    writer.close()
    server.close()
    return answers


def test_a_released_request_lets_the_next_start_and_answers_stay_in_order():
    async def main():
        dispatcher = ScriptedDispatcher(releases={b"A", b"B"})
        dispatcher.waits = {b"A": asyncio.Event(), b"B": asyncio.Event()}
        answers = await exchange(dispatcher, [b"A", b"B", b"C"], lambda: dispatcher.started == [b"A", b"B", b"C"])
        assert answers == [b"A", b"B", b"C"]  # C finished first, yet is answered last

    asyncio.run(main())


def test_a_request_that_completes_unanswered_lets_the_next_start():
    async def main():
        dispatcher = ScriptedDispatcher(releases={b"A"})
        dispatcher.waits = {b"A": asyncio.Event(), b"C": asyncio.Event()}
        # B completes while A still waits: C starts although B never released
        answers = await exchange(dispatcher, [b"A", b"B", b"C"], lambda: dispatcher.started == [b"A", b"B", b"C"])
        assert answers == [b"A", b"B", b"C"]

    asyncio.run(main())


def test_a_request_that_does_not_release_holds_the_next():
    async def main():
        dispatcher = ScriptedDispatcher(releases=set())
        dispatcher.waits = {b"A": asyncio.Event()}

        answers = await exchange(dispatcher, [b"A", b"B"], lambda: dispatcher.started == [b"A"])
        assert dispatcher.events == ["start A", "end A", "start B", "end B"]
        assert answers == [b"A", b"B"]

    asyncio.run(main())


@pytest.mark.parametrize(("failure", "reason"), [
    (MalformedRequestError("API key 99 unknown"), "API key 99 unknown"),
    (RuntimeError("a bug"), "unexpected error"),
])
def test_a_failed_request_closes_only_its_connection_and_cancels_the_released_requests_behind_it(
        caplog, failure, reason):
    caplog.set_level(logging.INFO, logger="brokerd.server.connection")

    async def main():
        dispatcher = ScriptedDispatcher(releases={b"A", b"B"}, failures={b"A": failure})
        dispatcher.waits = {name: asyncio.Event() for name in (b"A", b"B", b"C", b"D")}
        server = await serve(dispatcher)
        other_reader, other_writer = await connect(server, [b"D"])
        reader, writer = await connect(server, [b"A", b"B", b"C", b"E"])
        await until(lambda: sorted(dispatcher.started) == [b"A", b"B", b"C", b"D"])

        dispatcher.waits[b"A"].set()  # A fails while B (released) and C (not released) are in progress
        assert await closed_unanswered(reader)
        await until(lambda: "cancelled B" in dispatcher.events)
        assert "cancelled C" not in dispatcher.events  # unreleased: it finishes its work, unanswered
        dispatcher.waits[b"C"].set()
        await until(lambda: "end C" in dispatcher.events)
        assert b"E" not in dispatcher.started  # queued behind the failure: dropped

        dispatcher.waits[b"D"].set()  # the other connection carries on
        assert await answer(other_reader) == b"D"
        for stream in (writer, other_writer):
            stream.close()
        server.close()

    asyncio.run(main())
    assert f"closing connection from 127.0.0.1: {reason}" in caplog.messages
    if isinstance(failure, RuntimeError):  # a bug is logged with its traceback
        (logged,) = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert logged.exc_info[1] is failure


def test_every_request_sent_before_the_client_closed_is_processed_in_order():
    """An acks=0 producer writes its produce requests and closes: none of them may be dropped, though the
    requests ahead of them are still in progress when the close arrives."""
    async def main():
        dispatcher = ScriptedDispatcher(releases={b"A"})  # A: an acks=all produce waiting for replication
        dispatcher.waits = {b"A": asyncio.Event(), b"B": asyncio.Event()}  # B holds C until it completes
        closed = asyncio.Event()
        server = await serve(dispatcher, on_close=lambda *_: closed.set())
        _reader, writer = await connect(server, [b"A", b"B", b"C"])
        await until(lambda: dispatcher.started == [b"A", b"B"])

        writer.close()
        async with asyncio.timeout(10):
            await closed.wait()
        await until(lambda: "cancelled A" in dispatcher.events)  # no one to answer: only A's wait was left
        dispatcher.waits[b"B"].set()
        await until(lambda: "end C" in dispatcher.events)
        assert dispatcher.events == ["start A", "start B", "cancelled A", "end B", "start C", "end C"]
        server.close()

    asyncio.run(main())


class SentAndClosed(asyncio.Transport):
    """The transport of a client whose frames and close arrive together: reading, then nothing to write."""

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 50000) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_requests_that_arrive_with_the_close_are_processed_before_the_connection_ever_ran():
    async def main():
        dispatcher = ScriptedDispatcher(releases=set())
        connection = KafkaConnection(dispatcher, 1 << 20, lambda *_: True, lambda *_: None)
        connection.connection_made(SentAndClosed())
        connection.data_received(framed(b"A", b"B"))
        connection.connection_lost(None)  # in the same loop step: the connection's task has not run yet
        await until(lambda: dispatcher.events == ["start A", "end A", "start B", "end B"])

    asyncio.run(main())
