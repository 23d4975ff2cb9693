"""The health task runs on a schedule: a real Celery beat (DatabaseScheduler) and worker on the real Redis."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from controlplane.health.models import ClusterHealthSnapshot
from controlplane.health.schedule import ensure_schedule

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
CELERY = str(Path(sys.executable).parent / "celery")


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_beat_schedules_the_task_and_the_worker_records_snapshots(cluster, tmp_path):
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).ping()
    except redis.ConnectionError:
        pytest.fail(f"no Redis at {settings.CELERY_BROKER_URL}: run the suite with `make test`")
    # The schedule the data migration creates, at 1 s instead of 30 s (transactional tests flush the DB,
    # so the migration's row may be gone by now).
    ensure_schedule(IntervalSchedule, PeriodicTask, every_s=1)
    env = {**os.environ, "DATABASE_URL": database_url(), "STROM_CELERY_QUEUE": f"test-{uuid.uuid4().hex}"}
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("worker", "beat")}  # noqa: SIM115
    worker = subprocess.Popen([CELERY, "-A", "controlplane", "worker", "-c", "1", "-l", "info", "--without-gossip",
                               "--without-mingle", "--without-heartbeat"], env=env, stdout=logs["worker"],
                              stderr=subprocess.STDOUT, start_new_session=True)
    beat = subprocess.Popen([CELERY, "-A", "controlplane", "beat", "-l", "info", "--pidfile="], env=env,
                            stdout=logs["beat"], stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while ClusterHealthSnapshot.objects.count() < 2:
            assert worker.poll() is None and beat.poll() is None, "a Celery process died (see its log)"
            assert time.monotonic() < deadline, (tmp_path / "beat.log").read_text()[-2000:] + \
                (tmp_path / "worker.log").read_text()[-2000:]
            time.sleep(0.25)
    finally:
        stop(beat)
        stop(worker)
        for log in logs.values():
            log.close()
    first, second = ClusterHealthSnapshot.objects.order_by("taken_at")[:2]
    assert second.taken_at > first.taken_at
    assert (second.partitions, second.offline_partitions) == (cluster["partitions"], cluster["offline"])
    assert "controlplane.health.record_cluster_health" in (tmp_path / "beat.log").read_text()
