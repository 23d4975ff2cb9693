"""Raw wire behaviour: version negotiation errors, malformed frames close only their connection, and a
hypothesis fuzz drives a live broker with garbage while a well-behaved client keeps working."""

import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

API_VERSIONS = 18


def request(api_key: int, version: int, correlation_id: int, body: bytes = b"", flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"test" + (b"\0" if flexible else b"")
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def read_response(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def connect(broker) -> socket.socket:
    return socket.create_connection(("127.0.0.1", broker.port), timeout=10)


def closed_by_broker(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def api_versions_ok(broker) -> bool:
    with connect(broker) as sock:
        sock.sendall(request(API_VERSIONS, 0, 42))
        response = read_response(sock)
    return response[:6] == struct.pack(">ih", 42, 0)


def test_api_versions_above_its_range_gets_a_v0_body_with_error_35_and_the_table(broker):
    with connect(broker) as sock:
        sock.sendall(request(API_VERSIONS, 5, 7, b"\x05strom\x041.0\0", flexible=True))
        response = read_response(sock)
    correlation_id, error, count = struct.unpack_from(">ihi", response)
    assert (correlation_id, error) == (7, 35) and count > 20
    entries = {struct.unpack_from(">hhh", response, 10 + 6 * i)[0]: struct.unpack_from(">hhh", response, 10 + 6 * i)[1:]
               for i in range(count)}
    assert entries[0] == (0, 11) and entries[1] == (0, 17) and entries[18] == (0, 4) and entries[22] == (0, 5)


def test_api_versions_v3_is_answered_with_a_v0_response_header(broker):
    with connect(broker) as sock:
        sock.sendall(request(API_VERSIONS, 3, 8, b"\x06strom\x041.0\0", flexible=True))
        response = read_response(sock)
    correlation_id, error = struct.unpack_from(">ih", response)  # no tag byte after the correlation id (KIP-511)
    assert (correlation_id, error) == (8, 0)


def test_pipelined_requests_are_answered_in_order(broker):
    with connect(broker) as sock:
        sock.sendall(b"".join(request(API_VERSIONS, 0, i) for i in range(50)))
        assert [struct.unpack_from(">i", read_response(sock))[0] for _ in range(50)] == list(range(50))


def test_a_version_beyond_the_range_closes_only_that_connection(broker):
    with connect(broker) as other:
        with connect(broker) as sock:  # InitProducerId v6 is Kafka 4's: like Kafka 3.9, Strom cannot parse it
            sock.sendall(request(22, 6, 9, b"\x00\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\0", flexible=True))
            assert closed_by_broker(sock)
        other.sendall(request(API_VERSIONS, 0, 10))
        assert struct.unpack_from(">i", read_response(other))[0] == 10


def test_absurd_length_prefix_truncation_and_garbage_close_only_that_connection(broker):
    with connect(broker) as idle_client:
        for bad in (struct.pack(">i", 2**31 - 1), struct.pack(">i", -1), request(3, 4, 1, b"\x00\x00\x00\x05"),
                    request(999, 0, 1), struct.pack(">i", 3) + b"abc"):
            with connect(broker) as sock:
                sock.sendall(bad)
                assert closed_by_broker(sock)
        idle_client.sendall(request(API_VERSIONS, 0, 5))
        assert struct.unpack_from(">i", read_response(idle_client))[0] == 5


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.binary(max_size=200),
    st.builds(lambda key, version, body: request(key, version, 1, body),
              st.sampled_from([0, 1, 2, 3, 18, 19, 20, 21, 22, 32, 33, 37, 44, 60]), st.integers(-1, 12),
              st.binary(max_size=120)),
))
def test_fuzzed_frames_never_take_the_broker_down(broker, garbage):
    with connect(broker) as sock:
        sock.sendall(garbage)
        sock.shutdown(socket.SHUT_WR)
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
    assert broker.process.poll() is None
    assert api_versions_ok(broker)
