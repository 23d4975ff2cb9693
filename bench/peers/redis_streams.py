"""Redis Streams (Debian's redis-server, in memory, no persistence) as the non-Kafka peer."""

import contextlib
import shutil
import tempfile
from collections.abc import Iterator

from bench.peers import PeerUnavailable, RunningPeer, free_port
from bench.peers.kafka_protocol import _spawn


@contextlib.contextmanager
def redis_streams() -> Iterator[RunningPeer]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise PeerUnavailable("redis-server is not installed (Debian package redis-server)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as data, _spawn(
        "redis", [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--dir", data], port) as peer:
        yield peer
