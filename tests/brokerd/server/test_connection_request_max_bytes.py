"""`socket.request.max.bytes` against a real standalone broker started with a small limit: a frame of
exactly the limit is served; a size prefix one byte over it closes that connection as soon as the prefix
arrives (before any body: nothing is buffered for it), while a client already mid-request and new clients
carry on. (tests/integration/test_wire_errors.py covers absurd prefixes under the default limit.)"""

import struct

import pytest

from tests.support.broker import standalone_broker
from tests.support.kafka_wire import api_versions_v0, closed_by_broker, connect, read_frame

LIMIT = 4096
HEADER_BYTES = 10  # api_key, api_version, correlation_id, client_id length; ApiVersions v0 has no body


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker"),
                           overrides={"socket.request.max.bytes": str(LIMIT)}) as running:
        yield running


def api_versions_of_size(size: int, correlation_id: int) -> bytes:
    """An ApiVersions v0 frame whose size prefix is exactly `size` (padded with the client id)."""
    frame = api_versions_v0(correlation_id, client_id=b"c" * (size - HEADER_BYTES))
    assert struct.unpack_from(">i", frame)[0] == size
    return frame


def answered(sock, correlation_id: int) -> bool:
    return struct.unpack_from(">ih", read_frame(sock)) == (correlation_id, 0)


def test_a_frame_of_exactly_the_limit_is_served(broker):
    with connect(broker) as sock:
        sock.sendall(api_versions_of_size(LIMIT, 1))
        assert answered(sock, 1)


@pytest.mark.parametrize("size", [LIMIT + 1, 100 * 1024 * 1024, 2**31 - 1])
def test_a_prefix_over_the_limit_closes_the_connection_before_any_body_arrives(broker, size):
    with connect(broker) as sock:
        sock.sendall(struct.pack(">i", size))  # the prefix alone: the broker must not wait for the body
        assert closed_by_broker(sock)


def test_a_prefix_at_the_limit_waits_for_its_body(broker):
    with connect(broker) as sock:
        frame = api_versions_of_size(LIMIT, 2)
        sock.sendall(frame[:4])
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):  # neither closed nor answered: it is waiting for the body
            sock.recv(1)
        sock.settimeout(10)
        sock.sendall(frame[4:])
        assert answered(sock, 2)


def test_an_oversized_frame_closes_only_its_connection(broker):
    with connect(broker) as other:
        pending = api_versions_of_size(LIMIT, 3)
        other.sendall(pending[: LIMIT // 2])  # mid-request when the bad frame arrives
        with connect(broker) as bad:
            bad.sendall(api_versions_of_size(LIMIT + 1, 4))
            assert closed_by_broker(bad)
        other.sendall(pending[LIMIT // 2 :])
        assert answered(other, 3)
        other.sendall(api_versions_v0(5))
        assert answered(other, 5)
    with connect(broker) as fresh:
        fresh.sendall(api_versions_v0(6))
        assert answered(fresh, 6)
    assert broker.process.poll() is None
