"""`server.connection` loop turns on the acks=all path, counted with a transport that records what is written:
a request frame starts in the loop step after the bytes arrive (not after `_process` wakes up), and a released
request answers in the step its wait ends (not two steps later, through `_process`) when it is the first in
progress — and waits for the answers before it when it is not. An answer written that way which fills the
transport's buffer holds the next request until the client reads, as answers `_process` writes do."""

import asyncio
import contextlib
import functools
import struct
from collections.abc import Iterator

from brokerd.server.connection import KafkaConnection


class RecordingTransport(asyncio.Transport):
    """Records what is written; with `fills_up` set, a write pauses the protocol's writing, as a transport whose
    buffer passed its high-water mark does."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False
        self.fills_up = False
        self.protocol: KafkaConnection | None = None

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 50000) if name == "peername" else default

    def write(self, data) -> None:
        self.written.append(bytes(data))
        if self.fills_up:
            self.protocol.pause_writing()

    def writelines(self, list_of_data) -> None:
        for data in list_of_data:
            self.write(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class WaitingDispatcher:
    """Frames are one byte naming the request; every request releases, then waits for its event."""

    def __init__(self) -> None:
        self.waits: dict[bytes, asyncio.Event] = {}
        self.started: list[bytes] = []

    async def dispatch(self, frame: bytes, client_host: str, release=lambda: None) -> list[bytes]:
        self.started.append(frame)
        release()
        await self.waits.setdefault(frame, asyncio.Event()).wait()
        return [struct.pack(">i", len(frame)) + frame]


def in_loop(test):
    """Run the async test in a fresh event loop."""
    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())
    return run


def framed(name: bytes) -> bytes:
    return struct.pack(">i", len(name)) + name


async def connected() -> tuple[KafkaConnection, RecordingTransport, WaitingDispatcher]:
    dispatcher = WaitingDispatcher()
    connection = KafkaConnection(dispatcher, 1 << 20, lambda *_: True, lambda *_: None)
    transport = RecordingTransport()
    transport.protocol = connection
    connection.connection_made(transport)
    for _ in range(3):  # `_process` reaches its wait for frames
        await asyncio.sleep(0)
    return connection, transport, dispatcher


@in_loop
async def test_a_request_starts_in_the_step_after_its_bytes_arrive():
    connection, transport, dispatcher = await connected()
    connection.data_received(framed(b"a"))
    await asyncio.sleep(0)
    assert dispatcher.started == [b"a"]
    connection.data_received(framed(b"b"))  # "a" released: "b" starts at once too
    await asyncio.sleep(0)
    assert dispatcher.started == [b"a", b"b"]
    dispatcher.waits[b"a"].set()
    dispatcher.waits[b"b"].set()
    connection.connection_lost(None)


@in_loop
async def test_the_first_request_answers_in_the_step_its_wait_ends():
    connection, transport, dispatcher = await connected()
    connection.data_received(framed(b"a"))
    await asyncio.sleep(0)
    dispatcher.waits[b"a"].set()
    await asyncio.sleep(0)  # the step that ends the wait
    assert transport.written == [framed(b"a")]
    connection.connection_lost(None)


@in_loop
async def test_a_later_answer_waits_for_the_ones_before_it():
    connection, transport, dispatcher = await connected()
    connection.data_received(framed(b"a") + framed(b"b"))
    async with asyncio.timeout(10):
        while len(dispatcher.started) < 2:
            await asyncio.sleep(0)
    dispatcher.waits[b"b"].set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert transport.written == []
    dispatcher.waits[b"a"].set()
    async with asyncio.timeout(10):
        while len(transport.written) < 2:
            await asyncio.sleep(0)
    assert transport.written == [framed(b"a"), framed(b"b")]
    connection.connection_lost(None)


@in_loop
async def test_an_answer_the_client_does_not_read_holds_the_next_request():
    connection, transport, dispatcher = await connected()
    connection.data_received(framed(b"a"))
    await asyncio.sleep(0)
    transport.fills_up = True
    dispatcher.waits[b"a"].set()
    await asyncio.sleep(0)
    assert transport.written == [framed(b"a")]
    connection.data_received(framed(b"b"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert dispatcher.started == [b"a"]
    assert connection.idle  # waiting for the client to read: the listener may reap it
    connection.resume_writing()
    async with asyncio.timeout(10):
        while len(dispatcher.started) < 2:
            await asyncio.sleep(0)
    dispatcher.waits[b"b"].set()
    connection.connection_lost(None)


@contextlib.contextmanager
def steps_of(task: asyncio.Task) -> Iterator[list[int]]:
    """Counts the loop steps `task` runs (its wake-ups) inside the block, in `[0]`."""
    steps = [0]
    run = asyncio.Handle._run

    def counting(handle) -> None:
        if getattr(handle._callback, "__self__", None) is task:
            steps[0] += 1
        run(handle)

    asyncio.Handle._run = counting
    try:
        yield steps
    finally:
        asyncio.Handle._run = run


@in_loop
async def test_a_round_answered_in_its_own_steps_never_wakes_process():
    """Arrival, release and an answer written where its wait ends leave `_process` asleep: nothing is left to it."""
    connection, transport, dispatcher = await connected()
    with steps_of(connection._task) as steps:
        for name in (b"a", b"b", b"c"):
            connection.data_received(framed(name))
            await asyncio.sleep(0)
            dispatcher.waits[name].set()
            async with asyncio.timeout(10):
                while framed(name) not in transport.written:
                    await asyncio.sleep(0)
            for _ in range(3):  # a wake-up of `_process` would have run by now
                await asyncio.sleep(0)
    assert transport.written == [framed(b"a"), framed(b"b"), framed(b"c")]
    assert steps[0] == 0
    assert not connection.busy
    connection.connection_lost(None)
