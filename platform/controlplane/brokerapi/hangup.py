"""Noticing that the client of a request in progress hung up: how the web process learns that a broker died.

A broker keeps one session request open at all times (`GET /brokers/<id>/session`, renewed every minute).
When its process dies, even by SIGKILL, the kernel closes its sockets, so the web worker holding the
request sees end-of-file (or a reset) on the client socket at once: it waits in poll() on that socket,
woken only by the hang-up or the hold's end (no periodic probe: a held session costs no wake-ups). A host crash
or a network partition sends nothing; those are still caught by the session timeout.

The client socket is only reachable under gunicorn (`gunicorn.socket` in the WSGI environ); elsewhere
(Django's test client, runserver) there is no waiter and hang-ups are not noticed.
"""

import select
import socket
import time
from collections.abc import Callable

from django.http import HttpRequest

__all__ = ("hangup_waiter",)

STRAY_BYTES_STEP_S = 0.02
"""If the client sent bytes after its request (a broker never does), the socket stays readable without a hang-up:
the wait then looks again every this many seconds instead of spinning."""
_HANGUP_EVENTS = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)


def hangup_waiter(request: HttpRequest) -> Callable[[float], bool] | None:
    """A wait "until the client closes its end of this request's connection, at most `timeout` seconds": True if
    it hung up. None where the client socket is not reachable."""
    sock = request.META.get("gunicorn.socket")
    if not isinstance(sock, socket.socket):
        return None

    def hung_up() -> bool:
        try:
            # The request was fully read (a GET without a body), so anything readable now is EOF or a reset.
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # ECONNRESET and friends: the peer is gone
            return True

    def wait(timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(sock, _HANGUP_EVENTS)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return hung_up()
            ready = poller.poll(max(1, int(remaining * 1000)))
            if hung_up():
                return True
            if ready:  # stray bytes, not a hang-up
                time.sleep(min(STRAY_BYTES_STEP_S, max(deadline - time.monotonic(), 0.0)))

    return wait
