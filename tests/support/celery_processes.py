"""Real Celery processes for tests: they reach the test database (`database_url`) and the Redis of `make test`."""

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

CELERY = str(Path(sys.executable).parent / "celery")


def database_url() -> str:
    """The test database as DATABASE_URL, for child processes (transactional tests only: they commit)."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def require_redis() -> None:
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).ping()
    except redis.ConnectionError:
        pytest.fail(f"no Redis at {settings.CELERY_BROKER_URL}: run the suite with `make test`")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM its process group (Celery's warm shutdown), SIGKILL after 20 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextlib.contextmanager
def celery_worker(queue: str, log: Path, env: Mapping[str, str]) -> Iterator[subprocess.Popen]:
    """`celery worker -Q queue -c 1` on the test database, logging to `log`."""
    require_redis()
    with open(log, "wb") as output:
        worker = subprocess.Popen([CELERY, "-A", "controlplane", "worker", "-Q", queue, "-c", "1", "-l", "info",
                                   "-n", f"{queue}@%h", "--without-gossip", "--without-mingle",
                                   "--without-heartbeat"],
                                  env={**os.environ, "DATABASE_URL": database_url(), **env}, stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield worker
        finally:
            stop(worker)
