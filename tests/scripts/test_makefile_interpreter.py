"""The Makefile's choice of interpreter for `.venv`: the distribution's /usr/bin/python3.11 where it can make a venv
(built with PGO and LTO), else the first python3.11 or python3 on PATH; `$(VENV)/.interpreter` records the real path
of the chosen executable and is rewritten only when that changes, so that only a change makes the venv again."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTION_PYTHON = Path("/usr/bin/python3.11")


def record_interpreter(venv: Path, python: str | None = None) -> Path:
    """Make `venv/.interpreter` with the repository's Makefile (and nothing else: no venv, no install)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHON", "MAKEFLAGS")}
    overrides = [f"PYTHON={python}"] if python else []
    subprocess.run(["make", "-s", "-C", str(REPO), f"VENV={venv}", *overrides, f"{venv}/.interpreter"],
                   env=env, check=True, capture_output=True, text=True, timeout=60)
    return venv / ".interpreter"


def can_make_a_venv(python: Path) -> bool:
    return python.exists() and subprocess.run([str(python), "-c", "import ensurepip"],
                                              capture_output=True).returncode == 0


def real_executable(python: str) -> str:
    return subprocess.run([python, "-c", "import os, sys; print(os.path.realpath(sys.executable))"],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_default_is_the_distributions_interpreter_where_it_can_make_a_venv(tmp_path):
    recorded = record_interpreter(tmp_path / "venv").read_text().strip()
    if can_make_a_venv(DISTRIBUTION_PYTHON):
        assert recorded == str(DISTRIBUTION_PYTHON)
    else:
        assert recorded == real_executable(shutil.which("python3.11") or shutil.which("python3"))


def test_the_record_changes_only_with_the_interpreter(tmp_path):
    venv = tmp_path / "venv"
    this_python = sys.executable
    record = record_interpreter(venv, this_python)
    assert record.read_text().strip() == real_executable(this_python)
    os.utime(record, (1_000_000_000, 1_000_000_000))
    record_interpreter(venv, this_python)
    assert record.stat().st_mtime == 1_000_000_000, "the same interpreter rewrote the record (the venv would be remade)"

    other = tmp_path / "bin" / "python3"
    other.parent.mkdir()
    other.write_text('#!/bin/sh\necho /opt/another/python3\n')  # stands for another interpreter: prints its path
    other.chmod(0o755)
    record_interpreter(venv, str(other))
    assert record.read_text().strip() == "/opt/another/python3"
    assert record.stat().st_mtime > 1_000_000_000
