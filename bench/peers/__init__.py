"""Brokers the client benchmark runs against, each a subprocess whose CPU and RSS we read from /proc.

Every peer is a context manager yielding a `RunningPeer`; unavailable peers raise `PeerUnavailable`
with a one-line reason (printed, then skipped).
"""

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class PeerUnavailable(RuntimeError):
    """The peer cannot run on this machine (binary missing, KAFKA_HOME unset, ...)."""


@dataclass
class RunningPeer:
    name: str
    process: subprocess.Popen
    port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """utime + stime of the broker process and its reaped children (/proc/<pid>/stat)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
        return (utime + stime + cutime + cstime) / CLOCK_TICKS

    def rss_bytes(self) -> int:
        """Current resident set size (VmRSS)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(process: subprocess.Popen, port: int, timeout_s: float = 60.0) -> None:
    """Until something accepts on 127.0.0.1:`port` (a deadline, never a guessed sleep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PeerUnavailable(f"exited with status {process.returncode} during startup")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise PeerUnavailable(f"not listening on port {port} after {timeout_s}s")
