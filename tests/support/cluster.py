"""A real Strom cluster for integration and fault tests: the control plane (`tests.support.controlplane`)
plus N `python -m brokerd --broker-id N --controlplane URL` subprocesses on free 127.0.0.1 ports.

    with control_plane(tmp_path) as cp, broker_cluster(cp, tmp_path, 3) as cluster:
        cluster.bootstrap                      # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        cluster.kill(2); cluster.restart(2)     # SIGKILL, then start again on the same port and log dir
        cluster.leader("topic", 0)              # from the control plane's metadata image

Each broker keeps its port and log directory across restarts; its stderr goes to `<dir>/broker-N.log`.
"""

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.broker import REPO_ROOT, RunningBroker
from tests.support.controlplane import ControlPlane
from tests.support.polling import wait_until
from tests.support.ports import free_port


@dataclass
class ClusterBroker:
    broker_id: int
    port: int
    data_dir: Path
    overrides: Mapping[str, str]
    process: subprocess.Popen | None = None
    metrics_port: int | None = None
    """Where the broker serves Prometheus `/metrics` (`strom.metrics.port`), if asked for."""

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def log_file(self) -> Path:
        return self.data_dir / f"broker-{self.broker_id}.log"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def answers(self) -> bool:
        probe = RunningBroker(self.process, self.port, self.log_dir, self.log_file)  # type: ignore[arg-type]
        return probe.answers_api_versions()


@dataclass
class Cluster:
    plane: ControlPlane
    brokers: dict[int, ClusterBroker] = field(default_factory=dict)
    modules: Mapping[int, str] = field(default_factory=dict)
    """The module a broker runs as (`python -m …`) where not brokerd, e.g. `tests.support.held_loop_broker`."""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    def start(self, broker_id: int, timeout_s: float = 60.0) -> None:
        broker = self.brokers[broker_id]
        broker.log_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", self.modules.get(broker_id, "brokerd"), "--broker-id", str(broker_id),
                "--controlplane", self.plane.url, "--listeners", f"PLAINTEXT://127.0.0.1:{broker.port}",
                "--log-dirs", str(broker.log_dir)]
        overrides = dict(broker.overrides)
        if broker.metrics_port is not None:
            overrides["strom.metrics.port"] = str(broker.metrics_port)
        for key, value in overrides.items():
            argv += ["--override", f"{key}={value}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "STROM_CLUSTER_SECRET": self.plane.secret}
        with open(broker.log_file, "ab") as stderr:
            broker.process = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=stderr, env=env,
                                              start_new_session=True)
        wait_until(lambda: not broker.alive or broker.answers(), timeout_s, message=f"broker {broker_id} to serve")
        if not broker.alive:
            raise AssertionError(f"broker {broker_id} exited:\n{broker.log_file.read_text()[-5000:]}")

    def kill(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.alive:
            assert broker.process is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(broker.process.pid, signal.SIGKILL)
            broker.process.wait()

    def stop(self, broker_id: int, timeout_s: float = 20.0) -> None:
        broker = self.brokers[broker_id]
        if broker.alive:
            assert broker.process is not None
            broker.process.send_signal(signal.SIGTERM)
            try:
                broker.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill(broker_id)

    def restart(self, broker_id: int) -> None:
        self.kill(broker_id)
        self.start(broker_id)

    # --- the control plane's view ----------------------------------------------------------------------

    def partition_state(self, topic: str, partition: int) -> dict:
        image = self.plane.metadata()
        for entry in image["topics"]:
            if entry["name"] == topic:
                return next(p for p in entry["partitions"] if p["partition"] == partition)
        raise KeyError(topic)

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.partition_state(topic, partition)["leader"]

    def wait_for_isr(self, topic: str, size: int, partition: int = 0, timeout_s: float = 30.0) -> dict:
        return wait_until(lambda: (lambda s: s if len(s["isr"]) >= size and s["leader"] >= 0 else None)(
            self.partition_state(topic, partition)), timeout_s, message=f"{topic}-{partition} ISR of {size}")

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: Mapping[str, str] | None = None, assignments: list[list[int]] | None = None) -> dict:
        """The topic as the control plane answers it (its metadata image entry)."""
        request = {"name": name, "configs": dict(configs or {})}
        if assignments is None:
            request |= {"num_partitions": partitions, "replication_factor": replication_factor}
        else:
            request["assignments"] = assignments
        status, body = self.plane.call("POST", "/internal/v1/topics", request)
        assert status == 200, body
        return body


@contextlib.contextmanager
def broker_cluster(plane: ControlPlane, directory: Path, count: int = 3,
                   overrides: Mapping[str, str] | None = None, metrics: bool = False,
                   started: int | None = None, modules: Mapping[int, str] | None = None) -> Iterator[Cluster]:
    """`count` brokers, of which the first `started` (default all) are started (the others later, with
    `cluster.start(id)`: a broker added to the cluster); with `metrics`, each serves Prometheus `/metrics` on a
    port of its own."""
    cluster = Cluster(plane, modules=dict(modules or {}))
    for broker_id in range(1, count + 1):
        cluster.brokers[broker_id] = ClusterBroker(broker_id, free_port(), Path(directory) / f"broker-{broker_id}",
                                                   dict(overrides or {}), metrics_port=free_port() if metrics else None)
    started = count if started is None else started
    try:
        for broker_id in range(1, started + 1):
            cluster.start(broker_id)
        wait_until(lambda: sum(1 for b in plane.metadata()["brokers"] if b["state"] == "running") == started, 30,
                   message=f"{started} running brokers")
        yield cluster
    finally:
        for broker_id in cluster.brokers:
            cluster.stop(broker_id)
