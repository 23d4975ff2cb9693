"""platform/ must stay a plain folder: a package there would shadow the stdlib `platform` (and break uuid)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_platform_folder_is_not_a_package():
    assert (ROOT / "platform").is_dir()
    assert not (ROOT / "platform" / "__init__.py").exists()


def test_stdlib_platform_wins_from_the_repo_root():
    probe = ("import platform, sysconfig, uuid; "
             "assert platform.__file__.startswith(sysconfig.get_paths()['stdlib']), platform.__file__; "
             "print(platform.system())")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Linux"


def test_manage_py_runs_from_the_repo_root():
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout
