"""The fuzz targets in `make test`: every seed and every regression input (each a crash found once, then fixed)
through its target in-process, and each target under atheris for a short fixed budget (`STROM_FUZZ_SECONDS`,
default 3 s; `make fuzz` runs them for longer)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS

FUZZ_DIR = Path(__file__).resolve().parent
REPO_ROOT = FUZZ_DIR.parents[1]
SECONDS = int(os.environ.get("STROM_FUZZ_SECONDS", "3"))


def inputs(target: str) -> list[Path]:
    return sorted(p for kind in ("corpus", "regressions") for p in (FUZZ_DIR / kind / target).glob("*"))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_seeds_and_regression_inputs_pass_their_target(target):
    files = inputs(target)
    assert files, f"no seeds for {target}"
    for path in files:
        TARGETS[target](path.read_bytes())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_short_fuzzing_run_finds_no_crash(target):
    run = subprocess.run([sys.executable, "-m", "tests.fuzz.run", target, "--seconds", str(SECONDS)],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=SECONDS + 120)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "Done" in run.stderr, run.stderr[-2000:]
