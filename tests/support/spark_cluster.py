"""A real Spark standalone cluster (one master, one worker) started from the pip-installed pyspark with
`spark-class`, on free 127.0.0.1 ports; stopped (with the executors the worker started) on exit.

    with spark_standalone(tmp_path) as cluster:
        env["STROM_SPARK_MASTER"] = cluster.master_url
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.polling import wait_until
from tests.support.ports import free_port


@dataclass
class SparkStandalone:
    master_url: str
    master_ui: str
    processes: list[subprocess.Popen]

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=5) as answer:
            return json.load(answer)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _start(argv: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "ab") as output:
        # own process group: stopping it also stops the executor JVMs the worker forks
        return subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextlib.contextmanager
def spark_standalone(work_dir: Path, cores: int = 2, memory: str = "1g") -> Iterator[SparkStandalone]:
    home = spark_home()
    work_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_LOG_DIR": str(work_dir / "logs"), "SPARK_WORKER_DIR": str(work_dir / "work"),
           "PYSPARK_PYTHON": sys.executable}
    spark_class = str(home / "bin" / "spark-class")
    port, ui_port, worker_ui_port = free_port(), free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    cluster = SparkStandalone(master_url, f"http://127.0.0.1:{ui_port}", [])
    try:
        cluster.processes.append(_start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                         "--port", str(port), "--webui-port", str(ui_port)], env,
                                        work_dir / "master.log"))
        wait_until(lambda: _alive(cluster, 0), 90, 0.5, "the Spark master")
        cluster.processes.append(_start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                         "--cores", str(cores), "--memory", memory, "--work-dir",
                                         str(work_dir / "work"), "--webui-port", str(worker_ui_port), master_url],
                                        env, work_dir / "worker.log"))
        wait_until(lambda: _alive(cluster, 1), 90, 0.5, "a Spark worker registered with the master")
        yield cluster
    finally:
        for process in reversed(cluster.processes):
            _stop(process)


def _alive(cluster: SparkStandalone, workers: int) -> bool:
    for process in cluster.processes:
        if process.poll() is not None:
            raise AssertionError(f"{process.args[1]} exited with {process.returncode}")
    try:
        state = cluster.state()
    except OSError:
        return False
    return state.get("status") == "ALIVE" and state.get("aliveworkers", 0) >= workers
