"""A TCP proxy in front of one broker that records the Kafka requests passing through it, for tests that
check what brokers send each other (a broker advertised at the proxy's port is reached through it by the
other brokers and by clients alike).

    with RecordingProxy(broker.port) as proxy:        # proxy.port: advertise this one
        ...
        proxy.requests(api_key=1, client_id="strom-replica-fetcher-2")   # [SeenRequest(...), ...]

Each request is recorded as it is forwarded: its size, api key and version, client id, and the first bytes of
its body. Bytes are forwarded unchanged, in both directions; a closed side closes the other.
"""

import contextlib
import socket
import struct
import threading
import time
from dataclasses import dataclass

_HEADER = struct.Struct(">ihhih")
"""size, api_key, api_version, correlation_id, client_id length."""


@dataclass(frozen=True)
class SeenRequest:
    at: float
    """time.monotonic() when the request was forwarded."""
    size: int
    """Bytes of the request after its size prefix (header and body)."""
    api_key: int
    api_version: int
    client_id: str
    body_head: bytes
    """The first bytes of the body (after a v1 request header)."""


def _shut_down(*socks: socket.socket) -> None:
    """Both directions of each socket, so the thread relaying the other way ends too."""
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


class RecordingProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._seen: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False

    def __enter__(self) -> "RecordingProxy":
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._closed = True
        self._server.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()

    def requests(self, api_key: int | None = None, client_id: str | None = None, since: float = 0.0
                 ) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self._seen if (api_key is None or r.api_key == api_key)
                    and (client_id is None or r.client_id == client_id) and r.at >= since]

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()  # the broker is down: the client sees a refused-like close
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while True:
                head = _recv_exactly(client, _HEADER.size)
                size, api_key, api_version, _, client_id_length = _HEADER.unpack(head)
                rest = _recv_exactly(client, size + 4 - _HEADER.size)
                client_id = rest[:max(client_id_length, 0)].decode(errors="replace")
                body = rest[max(client_id_length, 0):]
                with self._lock:
                    self._seen.append(SeenRequest(time.monotonic(), size, api_key, api_version, client_id, body[:64]))
                upstream.sendall(head + rest)
        except OSError:
            pass
        finally:
            _shut_down(client, upstream)

    @staticmethod
    def _responses(upstream: socket.socket, client: socket.socket) -> None:
        try:
            while chunk := upstream.recv(65536):
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _shut_down(client, upstream)
