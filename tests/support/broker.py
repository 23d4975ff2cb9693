"""Start a real `python -m brokerd --standalone` subprocess on a free 127.0.0.1 port.

    with standalone_broker(tmp_path, overrides={"num.partitions": "3"}) as broker:
        KafkaProducer(bootstrap_servers=broker.bootstrap)

The helper returns once the broker answers an ApiVersions request, and on exit stops it with SIGTERM
(graceful shutdown), killing it only if it does not exit in time. Its stderr is kept in a log file
inside the data dir and printed if startup fails.
"""

import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.polling import wait_until
from tests.support.ports import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, 0)


@dataclass
class RunningBroker:
    process: subprocess.Popen
    port: int
    log_dir: Path
    log_file: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def answers_api_versions(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                sock.sendall(API_VERSIONS_V0)
                return len(sock.recv(8)) >= 8
        except OSError:
            return False

    def stop(self, timeout_s: float = 20.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def start_broker(data_dir: Path, overrides: Mapping[str, str] | None = None, port: int | None = None,
                 timeout_s: float = 30.0) -> RunningBroker:
    port = port or free_port()
    log_dir = data_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_file = data_dir / "broker.log"
    argv = [sys.executable, "-m", "brokerd", "--standalone", "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
            "--log-dirs", str(log_dir)]
    for key, value in (overrides or {}).items():
        argv += ["--override", f"{key}={value}"]
    with open(log_file, "ab") as stderr:
        process = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    broker = RunningBroker(process, port, log_dir, log_file)
    try:
        wait_until(lambda: process.poll() is not None or broker.answers_api_versions(), timeout_s,
                   message=f"broker on port {port}")
        if process.poll() is not None:
            raise AssertionError(f"broker exited with {process.returncode}:\n{log_file.read_text()}")
    except AssertionError:
        broker.stop()
        raise
    return broker


@contextlib.contextmanager
def standalone_broker(data_dir: Path, overrides: Mapping[str, str] | None = None) -> Iterator[RunningBroker]:
    broker = start_broker(data_dir, overrides)
    try:
        yield broker
    finally:
        broker.stop()
