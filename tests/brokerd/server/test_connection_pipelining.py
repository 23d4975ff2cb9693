"""`server.connection` over a real loopback socket, with a scripted dispatcher in place of the broker's: a
request that releases the connection (an acks=all produce waiting for replication) lets the next request
start while it waits; answers still leave in request order; a request that does not release holds the next."""

import asyncio
import struct

from brokerd.server.connection import KafkaConnection


class ScriptedDispatcher:
    """Frames are one byte naming the request; `waits[name]` holds it until set; `releases` release early."""

    def __init__(self, releases: set[bytes]) -> None:
        self.releases = releases
        self.waits: dict[bytes, asyncio.Event] = {}
        self.started: list[bytes] = []
        self.events: list[str] = []

    async def dispatch(self, frame: bytes, client_host: str, release=lambda: None) -> list[bytes]:
        self.started.append(frame)
        self.events.append(f"start {frame.decode()}")
        if frame in self.releases:
            release()
        if frame in self.waits:
            await self.waits[frame].wait()
        self.events.append(f"end {frame.decode()}")
        return [struct.pack(">i", len(frame)) + frame]


async def exchange(dispatcher: ScriptedDispatcher, frames: list[bytes], check) -> list[bytes]:
    """Send `frames` pipelined, run `check()` once every request that can start has started, then release all
    waits and return the answers in arrival order."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: KafkaConnection(dispatcher, 1 << 20, lambda _: None), "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    for frame in frames:
        writer.write(struct.pack(">i", len(frame)) + frame)
    await writer.drain()
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.01)
    for event in dispatcher.waits.values():
        event.set()
    answers = []
    async with asyncio.timeout(10):
        for _ in frames:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            answers.append(await reader.readexactly(size))
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
