"""`make run`: start a local Strom on 127.0.0.1 and stop every process it started on Ctrl-C.

Starts Redis (unless one already answers on STROM_REDIS_PORT), the web console with the dashboard and the
brokers' internal API (gunicorn), the controller, the Celery worker and beat, the metrics rollup consumer, the
consumer-lag monitor (`manage.py run_lag_monitor`), and
a 3-broker cluster whose brokers serve Prometheus /metrics. Each
child runs in its own session so that stopping it (SIGTERM, then SIGKILL after a grace period) also stops its
own children. Logs go to
$STROM_VAR_DIR/log/<name>.log. A child that exits once everything is up (a broker killed to watch a failover,
a crash) is restarted after a backoff (1 s, doubling up to 30 s; back to 1 s once it has run for 60 s), and
the others keep running; a child that exits while starting stops everything (exit status 1).

Environment: STROM_VAR_DIR (var/), STROM_HTTP_PORT (8000), STROM_REDIS_PORT (6390),
STROM_BROKER_PORT (9092: brokers 1-3 listen on it and the next two ports), STROM_METRICS_PORT (9404: brokers
1-3 serve /metrics on it and the next two ports), STROM_BROKER_PROPERTIES (extra broker properties for brokers
1-3, space-separated key=value, e.g. `strom.loop.slow.callback.ms=5`), STROM_CLUSTER_SECRET (default:
the one the control plane generated into $STROM_VAR_DIR/cluster_secret).

CPU slices (`brokerd.sched_slice`; Linux 6.12+): the brokers ask for `BROKER_SLICE_US` (`strom.sched.slice.us`,
which STROM_BROKER_PROPERTIES may override) and every other child inherits this process's `CONTROL_PLANE_SLICE_US`,
so a broker woken by a produce or a replica fetch preempts the control plane and the clients on the same CPUs
instead of waiting for their slice to end (issue 18: at 10,000 acks=all records/s on 2 CPUs, p99 ~1 ms lower).
Each broker's event-loop thread also runs real-time while it uses under half a CPU (`BROKER_LOOP_PRIORITY`,
`strom.sched.loop.priority`, `brokerd.loop_priority`; where the kernel allows it): a woken broker then runs at once,
ahead of every other process here (issue 18: p99 about half).
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from brokerd import sched_slice

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
VAR = Path(os.environ.get("STROM_VAR_DIR", ROOT / "var")).resolve()
HTTP_PORT = int(os.environ.get("STROM_HTTP_PORT", "8000"))
REDIS_PORT = int(os.environ.get("STROM_REDIS_PORT", "6390"))
BROKER_PORT = int(os.environ.get("STROM_BROKER_PORT", "9092"))
METRICS_PORT = int(os.environ.get("STROM_METRICS_PORT", "9404"))
BROKERS = 3
BROKER_SLICE_US = 100
"""The brokers' CPU slice (`strom.sched.slice.us`): the kernel's shortest."""
BROKER_LOOP_PRIORITY = 1
"""The SCHED_FIFO priority of the brokers' event-loop threads while they are light (`strom.sched.loop.priority`): the
lowest real-time one."""
CONTROL_PLANE_SLICE_US = 5_000
"""The CPU slice of every other child (inherited from this process): longer than the kernel's default (0.7-2.8 ms
with the number of CPUs), so a woken broker or client preempts them."""
# Brokers hold a metadata long poll and a session request open and heartbeat every 250 ms: gthread workers
# with enough threads keep heartbeats from queueing behind the held requests.
WEB_THREADS = 32
STOP_GRACE_S = 15.0
READY_TIMEOUT_S = 90.0
RESTART_BACKOFF_S = 1.0
MAX_RESTART_BACKOFF_S = 30.0
STABLE_AFTER_S = 60.0
"""A child that ran this long before it exited is restarted after `RESTART_BACKOFF_S` again."""


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = field(default=None, repr=False)
    started_at: float = 0.0
    restarts: int = 0
    backoff_s: float = RESTART_BACKOFF_S
    restart_at: float | None = None
    """When an exited child is due to start again (None: it runs)."""

    def start(self, env: dict[str, str]) -> None:
        log = open(VAR / "log" / f"{self.name}.log", "ab")  # noqa: SIM115  (owned by the child for its life)
        self.process = subprocess.Popen(self.argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.started_at, self.restart_at = time.monotonic(), None
        print(f"started {self.name} pid {self.process.pid}", flush=True)

    def supervise(self, env: dict[str, str], now: float) -> None:
        """Restart this child with backoff once it exited: note the exit, then start it when due."""
        if self.restart_at is None and self.process.poll() is not None:
            self.signal_group(signal.SIGKILL)  # whatever it started itself goes with it
            if now - self.started_at >= STABLE_AFTER_S:
                self.backoff_s = RESTART_BACKOFF_S
            self.restart_at = now + self.backoff_s
            self.restarts += 1
            print(f"{self.name} exited with status {self.process.returncode}; restarting it in {self.backoff_s:.0f} s "
                  f"(restart {self.restarts}; see {VAR / 'log' / self.name}.log)", flush=True)
            self.backoff_s = min(self.backoff_s * 2, MAX_RESTART_BACKOFF_S)
        elif self.restart_at is not None and now >= self.restart_at:
            self.start(env)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def group_alive(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        return True


def redis_answers() -> bool:
    cli = shutil.which("redis-cli")
    return bool(cli) and subprocess.run([cli, "-h", "127.0.0.1", "-p", str(REDIS_PORT), "ping"],
                                        capture_output=True).returncode == 0


def children() -> list[Child]:
    result = []
    if not redis_answers():
        (VAR / "redis").mkdir(parents=True, exist_ok=True)
        result.append(Child("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(REDIS_PORT),
                                      "--dir", str(VAR / "redis"), "--save", "", "--appendonly", "no"]))
    manage = [sys.executable, "manage.py"]
    result += [
        Child("web", [str(BIN / "gunicorn"), "controlplane.wsgi:application", "--bind", f"127.0.0.1:{HTTP_PORT}",
                      "--worker-class", "gthread", "--workers", "2", "--threads", str(WEB_THREADS),
                      "--graceful-timeout", "10"]),
        Child("controller", [*manage, "run_controller"]),
        Child("worker", [str(BIN / "celery"), "-A", "controlplane", "worker", "-l", "info", "-c", "2",
                         "--without-gossip", "--without-mingle"]),
        # Report runs (each a Spark job of its own, ~1 GB): one at a time, on their own queue.
        Child("reports-worker", [str(BIN / "celery"), "-A", "controlplane", "worker", "-l", "info", "-c", "1",
                                 "-Q", os.environ.get("STROM_REPORTS_QUEUE", "reports"), "-n", "reports@%h",
                                 "--without-gossip", "--without-mingle"]),
        Child("beat", [str(BIN / "celery"), "-A", "controlplane", "beat", "-l", "info", "--pidfile="]),
        Child("metrics", [*manage, "consume_metrics"]),
        Child("lag-monitor", [*manage, "run_lag_monitor"]),
    ]
    for broker_id in range(1, BROKERS + 1):
        result.append(Child(f"broker-{broker_id}", [
            sys.executable, "-m", "brokerd", "--broker-id", str(broker_id),
            "--controlplane", f"http://127.0.0.1:{HTTP_PORT}",
            "--listeners", f"PLAINTEXT://127.0.0.1:{BROKER_PORT + broker_id - 1}",
            "--log-dirs", str(VAR / "brokers" / str(broker_id)),
            "--override", f"strom.metrics.port={METRICS_PORT + broker_id - 1}",
            "--override", f"strom.sched.slice.us={BROKER_SLICE_US}",
            "--override", f"strom.sched.loop.priority={BROKER_LOOP_PRIORITY}",
            *(arg for pair in os.environ.get("STROM_BROKER_PROPERTIES", "").split() for arg in ("--override", pair))]))
    return result


def cluster_secret() -> str:
    """The internal API's secret: $STROM_CLUSTER_SECRET, else the one the control plane generated (migrate
    creates it when it first loads the settings)."""
    if secret := os.environ.get("STROM_CLUSTER_SECRET"):
        return secret
    path = VAR / "cluster_secret"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `make run` (it migrates first) or set STROM_CLUSTER_SECRET")
    return path.read_text().strip()


def wait_for_console(running: list[Child]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    url = f"http://127.0.0.1:{HTTP_PORT}/login/"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        for child in running:
            if child.process.poll() is not None:
                raise RuntimeError(f"{child.name} exited with status {child.process.returncode} while starting "
                                   f"(see {VAR / 'log' / child.name}.log)")
        time.sleep(0.2)
    raise TimeoutError(f"the console did not answer on {url} within {READY_TIMEOUT_S:.0f} s")


def stop(running: list[Child]) -> None:
    for child in reversed(running):
        child.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for child in reversed(running):
        while child.group_alive() and time.monotonic() < deadline:
            child.process.poll()
            time.sleep(0.05)
        if child.group_alive():
            print(f"{child.name} did not stop within {STOP_GRACE_S:.0f} s; killing it", flush=True)
            child.signal_group(signal.SIGKILL)
        child.process.wait()


class Interrupted(Exception):
    pass


def main() -> int:
    (VAR / "log").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "STROM_VAR_DIR": str(VAR), "STROM_CLUSTER_SECRET": cluster_secret(),
           "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", f"redis://127.0.0.1:{REDIS_PORT}/0")}

    def interrupt(signum, frame):
        raise Interrupted

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    sched_slice.request(CONTROL_PLANE_SLICE_US)  # before any child starts: each inherits it (brokers ask again)
    running: list[Child] = []
    status = 0
    try:
        for child in children():
            child.start(env)
            running.append(child)
        wait_for_console(running)
        print(f"\nStrom is up (logs in {VAR / 'log'}):\n"
              f"  console    http://127.0.0.1:{HTTP_PORT}/\n"
              f"  dashboard  http://127.0.0.1:{HTTP_PORT}/dashboard/\n"
              f"  REST API   http://127.0.0.1:{HTTP_PORT}/api/   (docs: /api/docs/, schema: /api/schema/)\n"
              f"  admin      http://127.0.0.1:{HTTP_PORT}/admin/")
        print(f"  brokers    {','.join(f'127.0.0.1:{BROKER_PORT + i}' for i in range(BROKERS))}")
        print(f"  metrics    {', '.join(f'http://127.0.0.1:{METRICS_PORT + i}/metrics' for i in range(BROKERS))}")
        print(f"  lag        http://127.0.0.1:{HTTP_PORT}/v3/kafka (Burrow's API), "
              f"http://127.0.0.1:{HTTP_PORT}/metrics (lag metrics); API token needed")
        print("A process that exits is restarted (try a failover: README, \"Watch a failover\").\n"
              "Press Ctrl-C to stop everything.", flush=True)
        while True:
            for child in running:
                child.supervise(env, time.monotonic())
            time.sleep(0.2)
    except Interrupted:
        status = 0
    except Exception as e:  # noqa: BLE001  (report one line, then clean up)
        print(f"error: {e}", file=sys.stderr, flush=True)
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stopping…", flush=True)
        stop(running)
        print("stopped.", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
