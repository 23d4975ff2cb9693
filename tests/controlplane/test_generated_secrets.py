"""The secrets generated into STROM_VAR_DIR on first use (`settings._generated_secret`): processes starting at the
same moment on a fresh directory (as `make test`'s two database passes do on a clean clone) all read one complete
secret, never an empty or half-written file."""

import os
import subprocess
import sys

from tests.support.controlplane import REPO_ROOT

READ_SECRETS = """
import django
django.setup()
from django.conf import settings
print(settings.SECRET_KEY, settings.STROM_CLUSTER_SECRET)
"""
PROCESSES = 8


def test_processes_starting_together_on_a_fresh_var_dir_share_one_complete_secret(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "STROM_CLUSTER_SECRET")}
    env.update({"STROM_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "controlplane.settings",
                "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'platform'}"})
    started = [subprocess.Popen([sys.executable, "-c", READ_SECRETS], cwd=REPO_ROOT, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(PROCESSES)]
    outputs = [process.communicate(timeout=120) for process in started]
    assert all(process.returncode == 0 for process in started), [err for _, err in outputs]
    secrets = {tuple(out.split()) for out, _ in outputs}
    assert len(secrets) == 1, secrets
    key, cluster = secrets.pop()
    assert len(key) >= 50 and len(cluster) >= 50
    assert sorted(p.name for p in tmp_path.iterdir() if "secret" in p.name) == ["cluster_secret", "secret_key"]
