"""Brokers the client benchmark runs against, each a subprocess whose CPU and RSS we read from /proc.

Every peer is a context manager yielding a `RunningPeer`; unavailable peers raise `PeerUnavailable`
with a one-line reason (printed, then skipped).
"""

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class PeerUnavailable(RuntimeError):
    """The peer cannot run on this machine (binary missing, KAFKA_HOME unset, ...)."""


@dataclass
class RunningPeer:
    name: str
    process: subprocess.Popen
    port: int
    replication_factor: int = 1
    acks: str = "1"
    topic_configs: dict[str, str] = field(default_factory=dict)
    others: list[tuple[subprocess.Popen, int]] = field(default_factory=list)
    """Further broker processes (and ports) of a multi-broker peer; CPU and RSS are summed over all."""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in [self.port, *(p for _, p in self.others)])

    def _processes(self) -> list[subprocess.Popen]:
        return [self.process, *(process for process, _ in self.others)]

    def cpu_seconds(self) -> float:
        """utime + stime of the broker processes and their reaped children (/proc/<pid>/stat)."""
        total = 0
        for process in self._processes():
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15])
        return total / CLOCK_TICKS

    def rss_bytes(self) -> int:
        """Current resident set size (VmRSS), summed over the broker processes."""
        total = 0
        for process in self._processes():
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

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
