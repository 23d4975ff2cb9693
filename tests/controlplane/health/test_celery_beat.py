"""The health task runs on a schedule: a real Celery beat (DatabaseScheduler) and worker on the real Redis."""

import os
import subprocess
import time
import uuid

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from controlplane.health.models import ClusterHealthSnapshot
from controlplane.health.schedule import ensure_schedule
from tests.support.celery_processes import CELERY, database_url, require_redis, stop

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_beat_schedules_the_task_and_the_worker_records_snapshots(cluster, tmp_path):
    require_redis()
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
