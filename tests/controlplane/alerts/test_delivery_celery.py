"""Acceptance: webhook deliveries by a real Celery worker and beat on the real Redis survive a restart. A
real receiver fails 3 times; the worker and beat are SIGKILLed after the first failure and started again;
the receiver gets the event on the 4th attempt under the same `webhook-id`, with a valid signature."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from standardwebhooks import Webhook

from controlplane.alerts import outbox
from controlplane.alerts.models import Delivery, WebhookEndpoint
from controlplane.alerts.schedule import ensure_schedule
from controlplane.celery import app
from tests.controlplane.health.test_celery_beat import database_url, stop
from tests.monitoring.test_payloads import notification
from tests.support.polling import wait_until
from tests.support.webhook_receiver import Receiver

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
CELERY = str(Path(sys.executable).parent / "celery")


class Celery:
    """A worker and a beat of the control plane's Celery app on a queue of their own."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.tmp_path, self.env, self.processes = tmp_path, env, []

    def start(self) -> None:
        for name, argv in (("worker", ["worker", "-c", "1", "--without-gossip", "--without-mingle",
                                       "--without-heartbeat"]), ("beat", ["beat", "--pidfile="])):
            with open(self.tmp_path / f"{name}.log", "ab") as log:
                self.processes.append(subprocess.Popen([CELERY, "-A", "controlplane", *argv, "-l", "info"],
                                                       env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                       start_new_session=True))

    def kill(self) -> None:
        for process in self.processes:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self.processes = []

    def stop(self) -> None:
        for process in self.processes:
            stop(process)

    def logs(self) -> str:
        return "".join((self.tmp_path / f"{n}.log").read_text()[-2000:] for n in ("worker", "beat"))


def test_a_failing_receiver_gets_the_event_on_the_fourth_attempt_across_a_worker_restart(
        tmp_path, settings, monkeypatch):
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).ping()
    except redis.ConnectionError:
        pytest.fail(f"no Redis at {settings.CELERY_BROKER_URL}: run the suite with `make test`")
    ensure_schedule(IntervalSchedule, PeriodicTask, every_s=1)  # the sweep; transactional tests flush the DB
    queue = f"test-{uuid.uuid4().hex}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)  # this process queues on the workers' queue too
    receiver = Receiver()
    receiver.answers = [(503, {})] * 3
    endpoint = WebhookEndpoint.objects.create(name="ops", url=receiver.url)
    celery = Celery(tmp_path, {**os.environ, "DATABASE_URL": database_url(), "STROM_CELERY_QUEUE": queue,
                               "STROM_WEBHOOK_RETRY_SCHEDULE_S": "2,1,1,1"})
    try:
        celery.start()
        [delivery_id] = outbox.enqueue([notification()])
        wait_until(lambda: Delivery.objects.get(pk=delivery_id).attempts >= 1, 60,
                   message="the first attempt recorded\n" + celery.logs())
        celery.kill()  # the control plane's Celery processes die between the failure and its retry
        row = Delivery.objects.get(pk=delivery_id)
        assert (row.state, row.attempts) == (Delivery.State.PENDING, 1)
        celery.start()
        wait_until(lambda: Delivery.objects.get(pk=delivery_id).state != Delivery.State.PENDING, 90,
                   message="the delivery to finish\n" + celery.logs())
    finally:
        celery.stop()
        receiver.close()
    row = Delivery.objects.get(pk=delivery_id)
    assert (row.state, row.attempts) == (Delivery.State.DELIVERED, 4)
    assert [a.status_code for a in row.attempt_log.all()] == [503, 503, 503, 200]
    assert len(receiver.requests) == 4
    assert {headers["webhook-id"] for _, _, headers, _ in receiver.requests} == {"evt-7"}
    for _, _, headers, body in receiver.requests:
        Webhook(endpoint.secret).verify(body, headers)
