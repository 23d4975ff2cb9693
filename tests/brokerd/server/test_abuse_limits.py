"""Limits that hold under abuse, against a real standalone broker while a well-behaved acks=all producer keeps
producing beside the abuser (every case demands fresh acknowledgements while the abuse is in place, and the
broker's memory stays bounded):

- a 200 MiB size prefix closes the connection before any of the frame is buffered;
- a 10 MB gzip batch inflating to 10 GB, produced to a compacted topic (whose keys the broker must read), is
  refused with INVALID_RECORD, having inflated at most `records.batch.MAX_DECOMPRESSED_BYTES`;
- 2,000 connections from one address (127.0.0.2) under `max.connections.per.ip`=50: 50 admitted, the rest
  closed at once, and a slot frees when an admitted connection closes;
- 100 slowloris clients trickling a request a byte a second are closed after `connections.max.idle.ms`;
- a client pipelining Fetch requests without ever reading is paused, holds bounded memory, and is closed
  after `connections.max.idle.ms`.
"""

import contextlib
import select
import socket
import struct
import time
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c

from brokerd.protocol.api_keys import ApiKey
from brokerd.records import batch as rb
from tests.support.broker import standalone_broker
from tests.support.kafka_wire import (
    FETCH_VERSION,
    api_versions_v0,
    closed_by_broker,
    connect,
    create_topic,
    decode_response,
    encode_request,
    fetch_request,
    produce_request,
    read_frame,
    record_batch,
)
from tests.support.polling import wait_until
from tests.support.steady_producer import SteadyProducer

PER_IP = 50
IDLE_MS = 2_000
MiB = 1 << 20


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def started(tmp_path_factory, overrides: dict[str, str]):
    with standalone_broker(tmp_path_factory.mktemp("broker"), overrides={
            "message.max.bytes": str(16 * MiB), **overrides}) as running:
        with connect(running) as sock:
            create_topic(sock, "steady", configs={"min.insync.replicas": "1"})
        with SteadyProducer(running.bootstrap, "steady") as producer:
            yield running, producer
        assert producer.errors == []


@pytest.fixture(scope="module")
def abused(tmp_path_factory):
    """A broker with `max.connections.per.ip`, and the producer beside it."""
    yield from started(tmp_path_factory, {"max.connections.per.ip": str(PER_IP)})


@pytest.fixture(scope="module")
def idle_abused(tmp_path_factory):
    """A broker with a short `connections.max.idle.ms` (reaping admitted connections too quickly for the
    connection-count test), and the producer beside it."""
    yield from started(tmp_path_factory, {"connections.max.idle.ms": str(IDLE_MS)})


@pytest.fixture
def broker(abused):
    return abused[0]


@pytest.fixture
def producer(abused):
    return abused[1]


def test_a_200_mib_size_prefix_is_refused_before_buffering(broker, producer):
    before = rss_bytes(broker.process.pid)
    with connect(broker) as sock:
        sock.sendall(struct.pack(">i", 200 * MiB) + b"\0" * MiB)  # the prefix, then the start of a body
        assert closed_by_broker(sock)
    producer.wait_for_progress(20)
    assert rss_bytes(broker.process.pid) - before < 50 * MiB


def gzip_bomb_batch(inflated_gib: int) -> bytes:
    """One v2 batch (codec gzip, one record declared) whose records section is a gzip stream of
    `inflated_gib` GiB of zeros: 1 MiB blocks, each ~1 KB compressed, repeated (each full flush resets
    the dictionary, so every block compresses alike). About 1 MB on the wire per GiB inflated."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = b"\0" * MiB
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    section = gzip_header + first + repeated * (inflated_gib * 1024 - 1) + compressor.flush()
    batch = bytearray(rb.HEADER_SIZE) + section
    now = int(time.time() * 1000)
    rb.HEADER.pack_into(batch, 0, 0, len(batch) - rb.LOG_OVERHEAD, -1, rb.MAGIC, 0, rb.GZIP, 0, now, now,
                        -1, -1, -1, 1)
    struct.pack_into(">I", batch, rb.CRC_OFFSET, crc32c(memoryview(batch)[rb.ATTRIBUTES_OFFSET:]))
    return bytes(batch)


def test_a_10_mb_batch_inflating_to_10_gb_is_refused_with_bounded_memory(broker, producer):
    bomb = gzip_bomb_batch(10)
    assert 10 * 10**6 < len(bomb) < 12 * MiB
    with connect(broker, timeout_s=60) as sock:
        create_topic(sock, "compacted", configs={"cleanup.policy": "compact", "max.message.bytes": str(16 * MiB)})
        before = rss_bytes(broker.process.pid)
        sock.sendall(encode_request(ApiKey.PRODUCE, 7, 1, produce_request("compacted", bomb)))
        _, response = decode_response(ApiKey.PRODUCE, 7, read_frame(sock))
        (partition,) = response.responses[0].partition_responses
        assert partition.error_code == 87  # INVALID_RECORD
        peak = rss_bytes(broker.process.pid) - before
        sock.sendall(encode_request(ApiKey.PRODUCE, 7, 2, produce_request(
            "compacted", record_batch([b"fine"], compression=rb.GZIP))))
        _, response = decode_response(ApiKey.PRODUCE, 7, read_frame(sock))
        assert response.responses[0].partition_responses[0].error_code == 0  # the same connection carries on
    # The request itself (11 MB, held twice while decoding) plus at most MAX_DECOMPRESSED_BYTES inflated.
    assert peak < rb.MAX_DECOMPRESSED_BYTES + 100 * MiB, peak / MiB
    producer.wait_for_progress(20)


def connect_from(broker, source: str) -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", broker.port))
    return sock


TCP_CLOSE, TCP_CLOSE_WAIT = 7, 8
"""Linux TCP states: reset by the peer; the peer sent FIN."""


def closed_now(sock: socket.socket) -> bool:
    """True if the broker has closed or reset `sock`; never blocks, reads nothing (so unread responses do not
    hide the close), and works for descriptors beyond select()'s 1024."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] in (TCP_CLOSE, TCP_CLOSE_WAIT)


def answers(sock: socket.socket, correlation_id: int) -> bool:
    """True if the broker answers an ApiVersions request on `sock`; False if it closed the connection."""
    try:
        sock.sendall(api_versions_v0(correlation_id))
        return struct.unpack_from(">ih", read_frame(sock)) == (correlation_id, 0)
    except (ConnectionError, BrokenPipeError):
        return False


def test_2000_connections_from_one_address_are_capped_at_max_connections_per_ip(broker, producer):
    sockets = [connect_from(broker, "127.0.0.2") for _ in range(2_000)]
    try:
        producer.wait_for_progress(20)  # 127.0.0.1 is another address: its producer is unaffected
        admitted = [sock for i, sock in enumerate(sockets) if answers(sock, i)]
        assert len(admitted) == PER_IP
        assert sum(closed_now(sock) for sock in sockets) >= len(sockets) - PER_IP
        for sock in sockets:
            sock.close()

        def a_slot_freed() -> bool:
            with connect_from(broker, "127.0.0.2") as sock:
                return answers(sock, 0)
        wait_until(a_slot_freed, 10, interval_s=0.1, message="a closed connection's slot to be reused")
    finally:
        for sock in sockets:
            sock.close()


def test_slowloris_clients_are_closed_after_the_idle_timeout(idle_abused):
    broker, producer = idle_abused
    frame = api_versions_v0(1, client_id=b"x" * 100)
    clients = [connect(broker) for _ in range(100)]
    start = time.monotonic()
    try:
        sent = 0
        while any(c.fileno() != -1 for c in clients):
            for client in clients:
                if client.fileno() != -1 and closed_now(client):
                    client.close()
            assert sent < len(frame), "the whole frame arrived before the broker closed the connection"
            for client in clients:
                if client.fileno() != -1:
                    client.send(frame[sent : sent + 1])
            sent += 1
            producer.wait_for_progress(5)
            select.select([c for c in clients if c.fileno() != -1], [], [], 1.0)  # one byte a second
        elapsed = time.monotonic() - start
    finally:
        for client in clients:
            client.close()
    assert IDLE_MS / 1000 <= elapsed <= IDLE_MS / 1000 + 10, elapsed


def test_a_client_that_never_reads_is_bounded_and_closed_after_the_idle_timeout(idle_abused):
    broker, producer = idle_abused
    with connect(broker) as setup:
        create_topic(setup, "big")
        for i in range(8):
            setup.sendall(encode_request(ApiKey.PRODUCE, 7, i, produce_request(
                "big", record_batch([bytes(100_000)] * 9))))
            assert decode_response(ApiKey.PRODUCE, 7, read_frame(setup))[1].responses[0] \
                .partition_responses[0].error_code == 0
    before = rss_bytes(broker.process.pid)
    fetch = encode_request(ApiKey.FETCH, FETCH_VERSION, 1, fetch_request("big", max_wait_ms=0,
                                                                          partition_max_bytes=8 * MiB))
    with connect(broker) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        sent_requests = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the broker stops reading (our send buffer fills)
            try:
                sock.send(fetch)
                sent_requests += 1
            except BlockingIOError:
                break
        assert sent_requests > 100  # ~7 MB answered each: the broker would buffer GBs if it did not pause
        producer.wait_for_progress(20)
        assert rss_bytes(broker.process.pid) - before < 100 * MiB
        wait_until(lambda: closed_now(sock), IDLE_MS / 1000 + 15, interval_s=0.1,
                   message="the never-reading connection to be closed")
    producer.wait_for_progress(20)


REGRESSIONS = Path(__file__).resolve().parents[2] / "fuzz" / "regressions" / "request"


@pytest.mark.parametrize("name", sorted(p.name for p in REGRESSIONS.iterdir()))
def test_a_request_found_by_the_fuzzer_closes_only_its_connection(broker, producer, name):
    frame = (REGRESSIONS / name).read_bytes()
    with connect(broker) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        sock.settimeout(30)
        with contextlib.suppress(ConnectionError):  # answered (an error response) or closed, never left hanging
            read_frame(sock)
    producer.wait_for_progress(5)
