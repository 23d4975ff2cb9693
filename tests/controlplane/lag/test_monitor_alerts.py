"""Acceptance, end to end through the control plane's side: a real standalone broker, a real consumer, the
lag monitor with the ORM store and the outbox sink (as `run_lag_monitor` wires it), and a real HTTP receiver
verifying Standard Webhooks signatures. A group that stops gets an OPEN, a REMINDER while it stays stopped
(the endpoint's reminder interval), and a CLOSE once it catches up, then nothing more; all arrive signed;
the incident is kept in the database. (The Celery worker's part of delivery is
test_delivery_celery's; here the test makes the attempts itself.)"""

import json
import uuid

import pytest
from standardwebhooks import Webhook

from controlplane.alerts import outbox
from controlplane.alerts.models import Delivery, WebhookEndpoint
from controlplane.lag.models import LagIncident
from controlplane.lag.store import OrmMonitorStore, OutboxSink, policies, silences, thresholds
from monitoring.config import MonitorConfig
from monitoring.model import Status
from monitoring.service import LagMonitor
from tests.monitoring.test_scenarios import commit, group_consumer, new_topic, pace, produce, result_where
from tests.support.broker import standalone_broker
from tests.support.polling import wait_until
from tests.support.webhook_receiver import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def broker(tmp_path):
    with standalone_broker(tmp_path / "broker") as running:
        yield running


def test_a_stopped_group_opens_and_a_recovered_one_closes_signed(broker, monkeypatch):
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: None)  # no Celery worker in this test
    receiver = Receiver()
    # 1 s: below what the console and REST accept (10 s), stored directly to keep the test short
    endpoint = WebhookEndpoint.objects.create(name="ops", url=receiver.url, reminder_interval_s=1)
    config = MonitorConfig(bootstrap_servers=broker.bootstrap, cluster="e2e", offset_refresh_s=0.25,
                           topic_refresh_s=0.25, intervals=5, evaluation_interval_s=0.25, min_stop_grace_s=1.0,
                           samples_topic=None)
    monitor = LagMonitor(config, OrmMonitorStore("e2e"), OutboxSink(), policies=policies, silences=silences,
                         thresholds=lambda: thresholds(config.thresholds))
    monitor.start()
    try:
        topic, group = new_topic(broker, monitor), f"g-{uuid.uuid4().hex[:8]}"
        consumer = group_consumer(broker, group)
        for offset in range(5, 35, 5):
            produce(broker, topic, 5)
            commit(consumer, topic, offset)
            pace()
        produce(broker, topic, 20)  # the log moves on; the group does not
        result_where(monitor, group, lambda r: r.partitions[0].status is Status.STOP, message="STOP")
        wait_until(lambda: Delivery.objects.filter(event="open", subject=group).exists(), 10, message="the OPEN")
        assert LagIncident.objects.get(group=group).closed_ms is None
        wait_until(lambda: Delivery.objects.filter(event="reminder", subject=group).exists(), 10,
                   message="a REMINDER after the interval")
        for _ in range(6):  # catches up: commits at the head
            commit(consumer, topic, 50)
            pace()
        wait_until(lambda: Delivery.objects.filter(event="close", subject=group).exists(), 20, message="the CLOSE")
        closed_at = monitor.stats().evaluated_at_seconds
        wait_until(lambda: monitor.stats().evaluated_at_seconds > closed_at + 2, 10, message="2 s more of rounds")
        consumer.close()
    finally:
        monitor.stop()
    assert set(Delivery.objects.filter(subject=group).values_list("endpoint__name", flat=True)) == {"ops"}
    for row in Delivery.objects.filter(subject=group).order_by("id"):
        assert outbox.send(row.id).state == Delivery.State.DELIVERED
    receiver.close()
    events = [Webhook(endpoint.secret).verify(body, headers) for _, _, headers, body in receiver.requests]
    kinds = [e["type"].rsplit(".", 1)[1] for e in events]
    assert kinds[0] == "open" and kinds[-1] == "close" and set(kinds[1:-1]) == {"reminder"}, kinds
    assert {e["data"]["group"] for e in events} == {group}
    assert json.loads(receiver.requests[0][3])["data"]["status"] in ("ERR", "STOP")
    assert LagIncident.objects.get(group=group).closed_ms is not None
