"""`server.connection` writes a response of bytes and file regions (a Fetch answer: each partition's header,
then its stored batches) in order, over a real loopback socket: regions go out with os.sendfile at once while
the socket takes them, and the rest through `loop.sendfile` once it would block — checked byte for byte with a
client of default socket buffers and with one whose 4 KiB receive buffer makes the server's socket fill and
block within the two (pipelined) answers, so the rest of a region goes through `loop.sendfile`."""

import asyncio
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from brokerd.server.connection import KafkaConnection

REGION_BYTES = 1 << 18
REGIONS = 4
HEADER_BYTES = 1 << 16


@dataclass(frozen=True)
class Region:
    file: object
    position: int
    length: int


class RegionDispatcher:
    """Answers each request (frame = one byte) with a header per region, then the region: `REGIONS` regions
    of `data`, the request's byte choosing where they start, so two answers differ. The headers are 64 KiB
    (bytes the transport may still buffer when the region after them is due)."""

    def __init__(self, file, data: bytes) -> None:
        self.file = file
        self.data = data

    def chunks(self, frame: bytes) -> list:
        body: list = []
        for index in range(REGIONS):
            position = (frame[0] + index * 7919) % (len(self.data) - REGION_BYTES)
            header = struct.pack(">ii", index, REGION_BYTES) + self.data[position:position + HEADER_BYTES]
            body += [header, Region(self.file, position, REGION_BYTES)]
        size = sum(len(c) if isinstance(c, bytes) else c.length for c in body)
        return [struct.pack(">i", size), *body]

    def expected(self, frame: bytes) -> bytes:
        return b"".join(c if isinstance(c, bytes) else self.data[c.position:c.position + c.length]
                        for c in self.chunks(frame))[4:]

    async def dispatch(self, frame: bytes, client_host: str, release=lambda: None) -> list:
        return self.chunks(frame)


@pytest.fixture
def dispatcher(tmp_path: Path):
    data = os.urandom(REGION_BYTES * 2)
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    with open(path, "rb", buffering=0) as file:
        yield RegionDispatcher(file, data)


async def fetch_answers(dispatcher: RegionDispatcher, frames: list[bytes], receive_buffer: int | None
                        ) -> list[bytes]:
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
        async with asyncio.timeout(30):
            for _ in frames:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                answers.append(await reader.readexactly(size))
        writer.close()
        return answers


@pytest.mark.parametrize("receive_buffer", [None, 4096], ids=["default-buffer", "4KiB-buffer"])
def test_regions_arrive_whole_and_in_order(dispatcher: RegionDispatcher, receive_buffer: int | None) -> None:
    frames = [b"\x01", b"\x02"]
    answers = asyncio.run(fetch_answers(dispatcher, frames, receive_buffer))
    assert answers == [dispatcher.expected(f) for f in frames]
