"""A Redis of a test's own, on a free port of 127.0.0.1, that the test can stop (e.g. to see what happens to
Celery's producers when their broker goes away); and the control plane's Celery app pointed at it."""

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.support.polling import wait_until
from tests.support.ports import free_port


@dataclass
class RedisServer:
    process: subprocess.Popen
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=2)

    def stop(self) -> None:
        """Stop it now (SIGKILL: no clean shutdown, as when it crashes) and wait until it is gone."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _answers(server: RedisServer) -> bool:
    try:
        return server.client().ping()
    except redis.ConnectionError:
        return False


@contextlib.contextmanager
def redis_server(work_dir: Path) -> Iterator[RedisServer]:
    """`redis-server` (no persistence) in the foreground, stopped on exit."""
    port = free_port()
    with open(work_dir / "redis.log", "wb") as log:
        process = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir",
                                    str(work_dir), "--save", "", "--appendonly", "no"], stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server = RedisServer(process, port)
    try:
        wait_until(lambda: _answers(server), timeout_s=20, message=f"redis-server on port {port}")
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def celery_broker(url: str) -> Iterator[None]:
    """The control plane's Celery app sends tasks to `url` inside the block (its connection and producer pools,
    bound to the broker URL at their first use, are dropped on the way in and out)."""
    from controlplane.celery import app

    saved = app.conf.get("broker_write_url"), app.conf.result_backend

    def use(broker: str | None, backend: str) -> None:
        # the write URL: Celery prefers the CELERY_BROKER_URL environment variable (set by scripts/test.sh) to
        # broker_url, but a configured broker_write_url to both
        app.conf.broker_write_url, app.conf.result_backend = broker, backend
        app._pool = None  # noqa: SLF001 (Celery rebuilds both from the configuration on the next send)
        app.amqp._producer_pool = None  # noqa: SLF001

    use(url, url)
    try:
        yield
    finally:
        use(*saved)
