"""`scripts/postgres.sh`, the test suite's PostgreSQL: a port already taken is one line naming the port and
the cause, and a non-zero exit (pg_ctl alone only says "Examine the log output")."""

import os
import socket
import subprocess
from pathlib import Path

from tests.support.ports import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"


def test_a_taken_port_is_one_line_with_the_cause(tmp_path):
    port = free_port()
    env = dict(os.environ, STROM_PG_PORT=str(port))
    with socket.create_server(("127.0.0.1", port)):
        started = subprocess.run(
            ["bash", str(SCRIPT), "start"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
    try:
        assert started.returncode == 1
        assert started.stdout == ""
        (line,) = [x for x in started.stderr.splitlines() if x.startswith("postgres.sh:")]
        assert f"did not start on port {port}" in line
        assert "Address already in use" in line
        assert "STROM_PG_PORT" in line
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], cwd=tmp_path, env=env, timeout=120)
