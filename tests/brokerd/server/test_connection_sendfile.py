"""`server.connection` writes an answer of bytes and file regions (a Fetch answer: each partition's header, then its
stored batches) byte for byte and in order, over a real loopback socket, on both of its paths: an answer whose
regions total at most `COPY_LIMIT` bytes is read and written in one write; a larger one goes out with os.sendfile
(zero copy) while the socket takes it, the rest through `loop.sendfile` once it would block. The oracle is the
answer's bytes read from the file. Checked with a client of default socket buffers and with one whose 4 KiB
receive buffer makes the server's socket fill and block within pipelined answers; the threshold's edges; and a
region whose file ends before it (truncated meanwhile), which ends the connection after the answers before it."""

import asyncio
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from brokerd.server import connection
from brokerd.server.connection import COPY_LIMIT, KafkaConnection

FILE_BYTES = 1 << 19
TAIL = b"\x00"


@dataclass(frozen=True)
class Region:
    file: object
    position: int
    length: int


PLANS: dict[int, list[tuple[int, int, int]]] = {
    # answer (the request's byte) -> (header bytes, region position, region length) per partition
    1: [(1 << 16, index * 7919, 1 << 18) for index in range(4)],  # zero copy; 64 KiB headers stay buffered
    2: [(40, 100, COPY_LIMIT)],  # one region at the limit: copied
    3: [(40, 100, COPY_LIMIT + 1)],  # one byte over: zero copy
    4: [(40, index * 5000, COPY_LIMIT // 4) for index in range(4)],  # regions totalling the limit: copied
    5: [(40, index * 5000, COPY_LIMIT // 4) for index in range(4)] + [(40, 3, 1)],  # one byte over: zero copy
    6: [(40, 0, 0), (40, 17, 333)],  # an empty region and a small one: copied
    7: [(40, FILE_BYTES - 500, 1000)],  # small, the file ends 500 bytes before its end
    8: [(40, FILE_BYTES - COPY_LIMIT, COPY_LIMIT + 1)],  # large, the file ends 1 byte before its end
}


class RegionDispatcher:
    """Answers each request (frame = one byte) with the partitions of its plan, each a header of bytes then a
    region of the file, and a one-byte tail (the tags after the last region)."""

    def __init__(self, file, data: bytes) -> None:
        self.file = file
        self.data = data

    def chunks(self, frame: bytes) -> list:
        body: list = []
        for header, position, length in PLANS[frame[0]]:
            body += [struct.pack(">ii", frame[0], length) + self.data[:header][-header + 8:],
                     Region(self.file, position, length)]
        body.append(TAIL)
        size = sum(len(c) if isinstance(c, bytes) else c.length for c in body)
        return [struct.pack(">i", size), *body]

    def expected(self, frame: bytes) -> bytes:
        return b"".join(c if isinstance(c, bytes) else self.data[c.position:c.position + c.length]
                        for c in self.chunks(frame))[4:]

    async def dispatch(self, frame: bytes, client_host: str, release=lambda: None) -> list:
        return self.chunks(frame)


@pytest.fixture
def dispatcher(tmp_path: Path):
    data = os.urandom(FILE_BYTES)
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    with open(path, "rb", buffering=0) as file:
        yield RegionDispatcher(file, data)


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts regions read into memory and regions sent with os.sendfile by the connection."""
    counts = {"read": 0, "sendfile": 0}
    read, send = connection._read_region, connection._send_region

    def counted(name, function):
        def call(*args):
            counts[name] += 1
            return function(*args)
        return call

    monkeypatch.setattr(connection, "_read_region", counted("read", read))
    monkeypatch.setattr(connection, "_send_region", counted("sendfile", send))
    return counts


async def fetch_answers(dispatcher: RegionDispatcher, frames: list[bytes], receive_buffer: int | None = None
                        ) -> tuple[list[bytes], bool]:
    """The answers read, in order, and whether the connection then ended before all came."""
    server = await asyncio.get_running_loop().create_server(
        lambda: KafkaConnection(dispatcher, 1 << 20, lambda *_: True, lambda *_: None), "127.0.0.1", 0)
    async with server:
        client = socket.socket()
        if receive_buffer:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        client.setblocking(False)
        await asyncio.get_running_loop().sock_connect(client, server.sockets[0].getsockname())
        reader, writer = await asyncio.open_connection(sock=client, limit=receive_buffer or 1 << 16)
        writer.write(b"".join(struct.pack(">i", len(f)) + f for f in frames))
        await writer.drain()
        answers = []
        ended = False
        async with asyncio.timeout(30):
            try:
                for _ in frames:
                    (size,) = struct.unpack(">i", await reader.readexactly(4))
                    answers.append(await reader.readexactly(size))
            except asyncio.IncompleteReadError:
                ended = True
        writer.close()
        return answers, ended


@pytest.mark.parametrize("receive_buffer", [None, 4096], ids=["default-buffer", "4KiB-buffer"])
def test_answers_arrive_whole_and_in_order(dispatcher: RegionDispatcher, receive_buffer: int | None) -> None:
    frames = [bytes([plan]) for plan in (1, 2, 3, 1, 4, 5, 6, 2)]
    answers, ended = asyncio.run(fetch_answers(dispatcher, frames, receive_buffer))
    assert not ended
    assert answers == [dispatcher.expected(f) for f in frames]


@pytest.mark.parametrize(("plan", "read", "sent"), [(2, 1, 0), (3, 0, 1), (4, 4, 0), (5, 0, 5), (6, 2, 0)],
                         ids=["at-limit", "one-over", "four-at-limit", "five-over", "empty-and-small"])
def test_copy_limit_picks_the_path(dispatcher: RegionDispatcher, paths: dict[str, int],
                                   plan: int, read: int, sent: int) -> None:
    answers, _ = asyncio.run(fetch_answers(dispatcher, [bytes([plan])]))
    assert answers == [dispatcher.expected(bytes([plan]))]
    assert (paths["read"], paths["sendfile"]) == (read, sent)


@pytest.mark.parametrize("receive_buffer", [None, 4096], ids=["default-buffer", "4KiB-buffer"])
@pytest.mark.parametrize("plan", [7, 8], ids=["copied", "zero-copy"])
def test_region_past_file_end_ends_the_connection(dispatcher: RegionDispatcher, plan: int,
                                                  receive_buffer: int | None) -> None:
    frames = [b"\x02", b"\x01", bytes([plan]), b"\x02"]
    answers, ended = asyncio.run(fetch_answers(dispatcher, frames, receive_buffer))
    assert ended  # never a short answer followed by the next one's bytes
    assert answers == [dispatcher.expected(f) for f in frames[:2]]
