"""Cluster alerts (broker down, offline and under-replicated partitions) from the metadata store: announced
once past their grace period, closed once when over, never for a problem that ended in its grace, with
chat/pager bodies and signed deliveries to a real receiver."""

import datetime

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from controlplane.alerts import cluster_alerts, outbox
from controlplane.alerts.models import ClusterAlert, Delivery, WebhookEndpoint
from controlplane.cluster.models import Broker, BrokerState
from controlplane.topics.models import Partition
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db
SECONDS = datetime.timedelta(seconds=1)


@pytest.fixture(autouse=True)
def woken(monkeypatch):
    calls = []
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: calls.extend(ids))
    return calls


def test_problems_open_after_their_grace_and_close_once(cluster, settings, django_capture_on_commit_callbacks):
    # conftest `cluster`: broker 3 fenced; orders-2 led by it (offline); orders-1 ISR [2, 1] (under-replicated)
    settings.STROM_ALERT_BROKER_DOWN_GRACE_S, settings.STROM_ALERT_UNDER_REPLICATED_GRACE_S = 30, 60
    WebhookEndpoint.objects.create(name="pager", url="https://events.example/v2", preset="pagerduty",
                                   routing_key="R" * 32)
    t0 = timezone.now()
    assert cluster_alerts.check(t0) == [("open", "offline-partition:orders-2")]  # at once
    assert cluster_alerts.check(t0 + 10 * SECONDS) == []
    assert cluster_alerts.check(t0 + 30 * SECONDS) == [("open", "broker-down:3")]
    assert cluster_alerts.check(t0 + 60 * SECONDS) == [("open", "under-replicated-partition:orders-1")]
    assert cluster_alerts.check(t0 + 70 * SECONDS) == []
    Broker.objects.filter(broker_id=3).update(state=BrokerState.RUNNING)
    Partition.objects.filter(topic__name="orders", partition=1).update(isr=[2, 3, 1])
    assert sorted(cluster_alerts.check(t0 + 80 * SECONDS)) == [
        ("close", "broker-down:3"), ("close", "offline-partition:orders-2"),
        ("close", "under-replicated-partition:orders-1")]
    assert cluster_alerts.check(t0 + 90 * SECONDS) == []
    bodies = {(d.event, d.subject): d.body for d in Delivery.objects.all()}
    assert len(bodies) == 6
    trigger = bodies[("cluster-open", "broker-down:3")]
    assert '"event_action":"trigger"' in trigger and '"severity":"critical"' in trigger
    assert '"dedup_key":"strom:cluster:broker-down:3"' in bodies[("cluster-close", "broker-down:3")]


def test_a_problem_over_within_its_grace_is_never_announced(cluster, settings):
    settings.STROM_ALERT_BROKER_DOWN_GRACE_S = 30
    t0 = timezone.now()
    cluster_alerts.check(t0)
    Broker.objects.filter(broker_id=3).update(state=BrokerState.RUNNING)  # back within 30 s
    assert ("open", "broker-down:3") not in cluster_alerts.check(t0 + 40 * SECONDS)
    assert not ClusterAlert.objects.filter(key="broker-down:3").exists()


def test_cluster_alerts_reach_a_real_receiver_signed(cluster, settings):
    receiver = Receiver()
    endpoint = WebhookEndpoint.objects.create(name="ops", url=receiver.url)
    [(_, key)] = cluster_alerts.check(timezone.now())
    [row] = Delivery.objects.all()
    assert outbox.send(row.id).state == Delivery.State.DELIVERED
    receiver.close()
    [(_, _, headers, body)] = receiver.requests
    event = Webhook(endpoint.secret).verify(body, headers)
    assert (event["type"], event["data"]["subject"], key) == (
        "strom.cluster.offline-partition.open", "orders-2", "offline-partition:orders-2")
