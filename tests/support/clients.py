"""The non-Python clients under test, built offline from Debian and npm packages and cached under `var/clients`.

* `sarama_client()`, `kafkago_client()`: the Go programs in `tests/clients/{sarama,kafkago}` built in GOPATH
  mode against Debian's `golang-github-shopify-sarama-dev` / `golang-github-segmentio-kafka-go-dev`
  (`/usr/share/gocode`), with Go's build cache in `var/clients/go-cache` (a rebuild takes about a second).
* `sarama_admin_client()`: `tests/clients/saramaadmin` built the same way, but with sarama 1.45 and Go 1.24 from
  Debian trixie, unpacked under `var/debian-trixie` by `scripts/ensure_trixie_go.sh` (bookworm's sarama 1.22.1
  predates the reassignment calls, and its Go 1.19 cannot build sarama 1.45). The first build compiles Go's
  standard library too: about a minute of CPU.
* `kafkajs_client()`: `tests/clients/kafkajs` (committed package.json + package-lock.json) installed with
  `npm ci` into `var/clients/kafkajs`, again only when the lock file changed.

The Debian packages (Go, sarama, kafka-go, Burrow, ZooKeeper) and Node.js come from
`scripts/ensure_system_packages.sh test`. `requests_seen(log, client_id)` reads which request versions a
client sent from a broker's log (the dispatcher logs the first of each).
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.broker import REPO_ROOT

CLIENTS = REPO_ROOT / "tests" / "clients"
BUILD_DIR = REPO_ROOT / "var" / "clients"
GOPATH = "/usr/share/gocode"
TRIXIE = REPO_ROOT / "var" / "debian-trixie" / "root"


def _go_build(name: str, go: str = "go", gopath: str = GOPATH, cache: str = "go-cache") -> Path:
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    binary = BUILD_DIR / f"{name}-client"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": gopath, "GOCACHE": str(BUILD_DIR / cache), "GOFLAGS": "",
           "GOTOOLCHAIN": "local"}
    env.pop("GOROOT", None)  # each toolchain finds its own
    result = subprocess.run([go, "build", "-o", str(binary), f"./tests/clients/{name}"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"go build of {name} failed:\n{result.stderr}"
    return binary


def sarama_client() -> Path:
    return _go_build("sarama")


def kafkago_client() -> Path:
    return _go_build("kafkago")


def sarama_admin_client() -> Path:
    setup = subprocess.run([str(REPO_ROOT / "scripts" / "ensure_trixie_go.sh")], capture_output=True, text=True,
                           timeout=900)
    assert setup.returncode == 0, f"scripts/ensure_trixie_go.sh failed:\n{setup.stdout}\n{setup.stderr}"
    return _go_build("saramaadmin", go=str(TRIXIE / "usr" / "lib" / "go-1.24" / "bin" / "go"),
                     gopath=str(TRIXIE / "usr" / "share" / "gocode"), cache="go-cache-trixie")


def kafkajs_client() -> Path:
    """`client.js` inside an installed copy of `tests/clients/kafkajs`."""
    source, target = CLIENTS / "kafkajs", BUILD_DIR / "kafkajs"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json", "client.js"):
        shutil.copyfile(source / name, target / name)
    lock = hashlib.sha256((source / "package-lock.json").read_bytes()).hexdigest()
    stamp = target / "node_modules" / ".strom-lock-sha256"
    if not stamp.exists() or stamp.read_text() != lock:
        result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=target, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"npm ci failed:\n{result.stdout}\n{result.stderr}"
        stamp.write_text(lock)
    return target / "client.js"


@dataclass(frozen=True)
class ClientRun:
    returncode: int
    steps: list[dict]
    output: str

    def failures(self) -> list[dict]:
        return [s for s in self.steps if not s.get("ok")]

    def step_names(self) -> set[str]:
        return {s["step"] for s in self.steps}


def run_client(argv: list[str], timeout_s: float = 240) -> ClientRun:
    """Run a client program that prints one JSON object per step."""
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    steps = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return ClientRun(result.returncode, steps, result.stdout + result.stderr)


_FIRST_REQUEST = re.compile(r"first (\w+) v(\d+) request from client_id '([^']*)'")


def requests_seen(broker_log: Path, client_id_prefix: str) -> dict[str, list[int]]:
    """API name -> sorted versions the clients whose id starts with `client_id_prefix` sent."""
    seen: dict[str, set[int]] = {}
    for api, version, client_id in _FIRST_REQUEST.findall(broker_log.read_text()):
        if client_id.startswith(client_id_prefix):
            seen.setdefault(api, set()).add(int(version))
    return {api: sorted(versions) for api, versions in sorted(seen.items())}
