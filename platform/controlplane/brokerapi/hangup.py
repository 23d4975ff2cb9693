"""Noticing that the client of a request in progress hung up: how the web process learns that a broker died.

A broker keeps one session request open at all times (`GET /brokers/<id>/session`, renewed every minute).
When its process dies, even by SIGKILL, the kernel closes its sockets, so the web worker holding the
request sees end-of-file (or a reset) on the client socket within one probing step, long before the
heartbeat session could expire. A host crash or a network partition sends nothing; those are still caught
by the session timeout.

The client socket is only reachable under gunicorn (`gunicorn.socket` in the WSGI environ); elsewhere
(Django's test client, runserver) there is no probe and hang-ups are not noticed.
"""

import socket
from collections.abc import Callable

from django.http import HttpRequest

__all__ = ("hangup_probe",)


def hangup_probe(request: HttpRequest) -> Callable[[], bool] | None:
    """A non-blocking check "did the client close its end of this request's connection?", or None."""
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

    return hung_up
