"""`server.connection` acknowledges a client's bytes as it reads them, over a real loopback socket.

Once a connection has exchanged a request and an answer, Linux delays the acknowledgement of what the client sends
next (up to 40 ms), expecting to carry it on the answer. A client that leaves Nagle's algorithm on (librdkafka's
default) holds its next request until the previous one is acknowledged, so an answer that waits (an acks=all
produce waiting for replication) would hold every request behind it, and a request larger than one segment would
wait for the delayed acknowledgement itself. The broker's TCP segments sent (`tcpi_segs_out`) are read as
`data_received` returns: one more than before the client sent, the acknowledgement, while the answer is held."""

import asyncio
import socket
import struct

import pytest

from brokerd.server.connection import KafkaConnection
from tests.brokerd.server.test_connection_pipelining import ScriptedDispatcher, answer, framed, until

TCP_INFO_SEGS_OUT = struct.Struct("=I")
TCP_INFO_SEGS_OUT_OFFSET = 136
"""Offset of `tcpi_segs_out` in Linux's `struct tcp_info` (8 one-byte fields, 24 u32, 4 u64 before it)."""

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="Linux's TCP_QUICKACK")


def segs_out(sock) -> int:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SEGS_OUT_OFFSET + 4)
    return TCP_INFO_SEGS_OUT.unpack_from(info, TCP_INFO_SEGS_OUT_OFFSET)[0]


class SegmentsObserved(KafkaConnection):
    """A connection that notes its socket's segments sent each time `data_received` returns."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.segments_after_reads: list[int] = []
        self.socket = transport.get_extra_info("socket")
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self.segments_after_reads.append(segs_out(self.socket))


def test_a_request_is_acknowledged_when_read_not_with_its_answer():
    async def run() -> None:
        dispatcher = ScriptedDispatcher(releases={b"b"})
        held = dispatcher.waits[b"b"] = asyncio.Event()
        connections: list[SegmentsObserved] = []

        def accept() -> SegmentsObserved:
            connections.append(SegmentsObserved(dispatcher, 1 << 20, lambda *_: True, lambda *_: None))
            return connections[-1]

        server = await asyncio.get_running_loop().create_server(accept, "127.0.0.1", 0)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        try:
            writer.write(framed(b"a"))  # one exchange: the kernel now expects to acknowledge with answers
            assert await answer(reader) == b"a"
            (broker,) = connections
            before = segs_out(broker.socket)
            reads = len(broker.segments_after_reads)
            writer.write(framed(b"b"))  # its answer held until `held` is set
            await until(lambda: dispatcher.started == [b"a", b"b"])
            assert broker.segments_after_reads[reads] == before + 1, "no acknowledgement sent as the bytes were read"
            held.set()
            assert await answer(reader) == b"b"
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    asyncio.run(run())
