"""Start a real Strom control plane (web + controller) on 127.0.0.1 for integration and fault tests.

    with control_plane(tmp_path, env={"STROM_BROKER_SESSION_TIMEOUT_MS": "2000"}) as cp:
        cp.url, cp.secret                       # give these to brokers (--control-plane / STROM_CLUSTER_SECRET)
        cp.call("POST", "/internal/v1/topics", {...})
        cp.kill_web(); cp.start_web()           # SIGKILL and restart gunicorn (same port, same database)
        cp.kill_controller(); cp.start_controller()
        cp.wait_for_controller(min_epoch=2)     # a restarted controller waits for the old lease to expire

What it runs: a fresh STROM_VAR_DIR under the given directory with its own SQLite database (`manage.py
migrate`, then `manage.py ensure_admin`: the superuser ADMIN_USER / ADMIN_PASSWORD), gunicorn serving
`controlplane.wsgi:application` with gthread workers and enough threads for every broker's metadata long poll
plus heartbeats, and `manage.py run_controller`. DATABASE_URL is dropped from the
children's environment, so the control plane never touches the test database. Each child runs in its own
session; on exit both are stopped (SIGTERM, SIGKILL after a grace period). Logs: <var>/log/{web,controller}.log.
"""

import contextlib
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tests.support.polling import wait_until
from tests.support.ports import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
ADMIN_USER = "admin"
ADMIN_PASSWORD = "control-plane-admin"
"""The local superuser (`manage.py ensure_admin`, as `make run` creates it)."""
WEB_THREADS = 64
ACCESS_LOG_FORMAT = '%(t)s "%(r)s" %(s)s %(b)s %(M)sms'
"""Gunicorn access log lines with the time the response was logged (1 s resolution) and the time taken (ms)."""
STOP_GRACE_S = 10.0


@dataclass
class ControlPlane:
    var_dir: Path
    port: int
    secret: str
    env: dict[str, str]
    web: subprocess.Popen | None = field(default=None, repr=False)
    controller: subprocess.Popen | None = field(default=None, repr=False)
    metrics_consumer: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def database(self) -> Path:
        return self.var_dir / "strom.sqlite3"

    # --- HTTP ------------------------------------------------------------------------------------------

    def call(self, method: str, path: str, body: object | None = None, timeout_s: float = 35.0,
             secret: str | None = None) -> tuple[int, object]:
        """One internal-API request; returns (status, decoded JSON or None). Never raises for 4xx/5xx."""
        request = urllib.request.Request(
            self.url + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.secret if secret is None else secret}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        return status, (json.loads(raw) if raw else None)

    def metadata(self, min_version: int = 0, wait_ms: int = 0) -> dict:
        status, image = self.call("GET", f"/internal/v1/metadata?min_version={min_version}&wait_ms={wait_ms}")
        assert status == 200, image
        return image

    def web_answers(self) -> bool:
        try:
            return self.call("GET", "/internal/v1/metadata", timeout_s=2)[0] == 200
        except OSError:
            return False

    # --- the controller's lease, read from the database ------------------------------------------------

    def controller_state(self) -> tuple[int, str, datetime | None]:
        """(controller_epoch, active_controller_id, lease_expires_at) straight from the SQLite file."""
        with contextlib.closing(sqlite3.connect(self.database, timeout=10)) as db:
            epoch, holder, expires = db.execute(
                "SELECT controller_epoch, active_controller_id, lease_expires_at FROM cluster_controllerstate"
            ).fetchone()
        return epoch, holder, (datetime.fromisoformat(expires).replace(tzinfo=UTC) if expires else None)

    def wait_for_controller(self, min_epoch: int = 1, timeout_s: float = 30.0) -> int:
        def active() -> int | None:
            epoch, holder, expires = self.controller_state()
            live = holder and expires is not None and expires > datetime.now(UTC) and epoch >= min_epoch
            return epoch if live else None

        return wait_until(active, timeout_s, message=f"an active controller with epoch >= {min_epoch}")

    # --- processes -------------------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.var_dir / "log" / f"{name}.log", "ab")  # noqa: SIM115 (the child keeps it)
        try:
            return subprocess.Popen(argv, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()

    def start_web(self, timeout_s: float = 60.0) -> None:
        self.web = self._spawn("web", [
            sys.executable, "-m", "gunicorn", "controlplane.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
            "--worker-class", "gthread", "--workers", "1", "--threads", str(WEB_THREADS), "--timeout", "60",
            "--graceful-timeout", "5", "--access-logfile", "-",
            "--access-logformat", ACCESS_LOG_FORMAT])
        try:
            wait_until(self.web_answers, timeout_s, interval_s=0.1, message="the control plane's web process")
        except AssertionError:
            raise AssertionError(f"web did not start:\n{self.log('web')}") from None

    def start_controller(self) -> None:
        self.controller = self._spawn("controller", [sys.executable, "manage.py", "run_controller"])

    def start_metrics_consumer(self) -> None:
        """`manage.py consume_metrics` (the rollups of `__strom_metrics` and `__strom_lag_samples`)."""
        self.metrics_consumer = self._spawn("metrics-consumer", [sys.executable, "manage.py", "consume_metrics"])

    def stop_metrics_consumer(self) -> None:
        _stop(self.metrics_consumer)

    def kill_web(self) -> None:
        _kill(self.web)

    def kill_controller(self) -> None:
        _kill(self.controller)

    def stop(self) -> None:
        for process in (self.metrics_consumer, self.controller, self.web):
            _stop(process)

    def log(self, name: str) -> str:
        path = self.var_dir / "log" / f"{name}.log"
        return path.read_text(errors="replace")[-5000:] if path.exists() else ""


def _kill(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _stop(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill(process)


@contextlib.contextmanager
def control_plane(directory: Path, env: Mapping[str, str] | None = None, controller: bool = True
                  ) -> Iterator[ControlPlane]:
    """A migrated control plane in `directory`/controlplane, serving and (unless `controller=False`) with an
    active controller; stopped on exit. `env` overrides settings, e.g. STROM_BROKER_SESSION_TIMEOUT_MS."""
    var_dir = Path(directory) / "controlplane"
    (var_dir / "log").mkdir(parents=True, exist_ok=True)
    child_env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "STROM_CLUSTER_SECRET")}
    secret = secrets.token_urlsafe(32)
    child_env.update({"STROM_VAR_DIR": str(var_dir), "STROM_CLUSTER_SECRET": secret,
                      "DJANGO_SETTINGS_MODULE": "controlplane.settings", "PYTHONUNBUFFERED": "1",
                      "STROM_ADMIN_USER": ADMIN_USER,
                      "STROM_LOG_LEVEL": child_env.get("STROM_LOG_LEVEL", "WARNING"), **(env or {})})
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO_ROOT, env=child_env,
                   check=True, capture_output=True)
    subprocess.run([sys.executable, "manage.py", "ensure_admin"], cwd=REPO_ROOT, check=True, capture_output=True,
                   env={**child_env, "STROM_ADMIN_PASSWORD": ADMIN_PASSWORD})
    plane = ControlPlane(var_dir, free_port(), secret, child_env)
    try:
        plane.start_web()
        if controller:
            plane.start_controller()
            plane.wait_for_controller()
        yield plane
    finally:
        plane.stop()
