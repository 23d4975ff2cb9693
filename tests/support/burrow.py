"""Burrow 1.2.1 (Debian's `burrow`) with the ZooKeeper it requires (Debian's `zookeeper`), on free ports.

    with burrow(tmp_path, bootstrap=["127.0.0.1:9092"]) as running:
        requests.get(f"{running.url}/v3/kafka/strom/consumer")

Burrow reads the cluster as sarama at `kafka-version` 2.1.0 (Metadata v5, Fetch v10, ...), consumes
`__consumer_offsets` itself and serves its HTTP API; the cluster is named `strom`. ZooKeeper runs from
`/usr/share/java/zookeeper.jar` (its manifest names its dependencies). Both stop on exit (SIGTERM, then
SIGKILL); their logs stay in the directory.
"""

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.support.polling import wait_until
from tests.support.ports import free_port

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
CLUSTER = "strom"


@dataclass(frozen=True)
class RunningBurrow:
    url: str
    log_file: Path
    process: subprocess.Popen

    def get(self, path: str) -> dict:
        """The JSON body of `GET /v3/kafka/strom{path}`; AssertionError with the end of Burrow's log when Burrow
        has exited (it does when a module fails to start)."""
        assert self.process.poll() is None, f"Burrow exited: {self.log_file.read_text()[-3000:]}"
        response = requests.get(f"{self.url}/v3/kafka/{CLUSTER}{path}", timeout=5)
        return response.json()


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/burrow/admin", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def _zookeeper_serves(port: int) -> bool:
    """`srvr` names the server's mode only once it serves sessions (`ruok` answers before that)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"srvr")
            return b"Mode:" in sock.recv(4096)
    except OSError:
        return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def burrow(directory: Path, bootstrap: list[str], kafka_version: str = "2.1.0") -> Iterator[RunningBurrow]:
    directory.mkdir(parents=True, exist_ok=True)
    zk_port, http_port = free_port(), free_port()
    (directory / "zk-data").mkdir(exist_ok=True)
    (directory / "zoo.cfg").write_text(f"tickTime=500\ndataDir={directory / 'zk-data'}\nclientPort={zk_port}\n"
                                       "admin.enableServer=false\n4lw.commands.whitelist=srvr\n")
    servers = ", ".join(f'"{server}"' for server in bootstrap)
    (directory / "burrow.toml").write_text(f"""
[general]
pidfile="{directory / 'burrow.pid'}"
stdout-logfile="{directory / 'burrow.out'}"
[logging]
filename="{directory / 'burrow.log'}"
level="info"
[zookeeper]
servers=["127.0.0.1:{zk_port}"]
timeout=30
root-path="/burrow"
[client-profile.strom]
client-id="burrow-strom"
kafka-version="{kafka_version}"
[cluster.{CLUSTER}]
class-name="kafka"
servers=[{servers}]
client-profile="strom"
topic-refresh=2
offset-refresh=1
[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers=[{servers}]
client-profile="strom"
offsets-topic="__consumer_offsets"
start-latest=false
[httpserver.default]
address="127.0.0.1:{http_port}"
[storage.default]
class-name="inmemory"
workers=4
intervals=3
expire-group=604800
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=1
""")
    url = f"http://127.0.0.1:{http_port}"
    with open(directory / "zookeeper.out", "ab") as zk_log:
        zookeeper = subprocess.Popen(["java", "-Xmx128m", "-cp", ZOOKEEPER_JAR,
                                      "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(directory / "zoo.cfg")],
                                     stdout=zk_log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: _zookeeper_serves(zk_port), 60, message="ZooKeeper")
        with open(directory / "burrow.run", "ab") as run_log:
            process = subprocess.Popen(["Burrow", "--config-dir", str(directory)], stdout=run_log,
                                       stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: process.poll() is not None or _answers(url), 60, message="Burrow's HTTP API")
            assert process.poll() is None, (directory / "burrow.log").read_text()[-3000:]
            yield RunningBurrow(url, directory / "burrow.log", process)
        finally:
            _stop(process)
    finally:
        _stop(zookeeper)
