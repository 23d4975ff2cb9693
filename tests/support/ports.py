"""Free 127.0.0.1 ports for the servers tests start, chosen outside the kernel's ephemeral port range.

Why outside: a port the kernel may hand out as the source port of an outgoing connection can be taken while its
server is down. A client that keeps reconnecting to a stopped local server (librdkafka, a replica fetcher) sooner
or later connects from that very port — TCP's simultaneous open then connects the socket to itself, and it stays
established while the client waits for an answer to its own request — and the restarted server cannot bind
(EADDRINUSE). Linux hands connect() the even ports of the range first, so the second of three consecutive ports
from `bind(0)` was taken this way in 2 of 5 runs of `test_run_local` after its broker 2 was killed. Ports below the
range (from `FIRST_PORT`) are never a source port, so a server restarted on its port always gets it back.

A port is free when a plain bind (no SO_REUSEADDR: a connection in TIME_WAIT on it counts) succeeds; the
choice is random, so processes running tests side by side rarely try the same port, and retried when taken.
"""

import random
import socket
from pathlib import Path

FIRST_PORT = 20_000
"""The lowest port handed out: above the ports services commonly listen on (PostgreSQL, Redis, 8000, 9092)."""
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
ATTEMPTS = 1000
PORT_LIMIT = 65_536
"""One past the highest TCP port."""


def _ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range."""
    try:
        low, _ = EPHEMERAL_RANGE.read_text().split()
        return int(low)
    except (OSError, ValueError):
        return 32_768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_run(count: int) -> int:
    """The first of `count` consecutive ports, all free now and none in the ephemeral range (a cluster's brokers
    take consecutive ports). Falls back to the kernel's choice where the range leaves no room below it."""
    low = _ephemeral_start()
    candidates = range(FIRST_PORT, low - count + 1)
    for _ in range(ATTEMPTS if candidates else 0):
        first = random.choice(candidates)
        if all(_bindable(port) for port in range(first, first + count)):
            return first
    for _ in range(ATTEMPTS):  # no room below the range (or it is all taken): ports from bind(0), as before
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            first = sock.getsockname()[1]
        if first + count <= PORT_LIMIT and all(_bindable(port) for port in range(first, first + count)):
            return first
    raise RuntimeError(f"no {count} consecutive free ports on 127.0.0.1")


def free_port() -> int:
    """One free port outside the ephemeral range (see the module docstring)."""
    return free_port_run(1)
