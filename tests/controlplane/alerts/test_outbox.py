"""The webhook outbox (controlplane.alerts.outbox) against a real HTTP receiver verifying Standard Webhooks
signatures: one row per endpoint and event, retries with the same id and body, the attempt log, 410 disabling
the endpoint, group filters and unbuildable bodies."""

import dataclasses

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from controlplane.alerts import outbox
from controlplane.alerts.models import Delivery, WebhookEndpoint
from controlplane.lag.store import policies
from monitoring.model import Status
from monitoring.notifier.incidents import EventKind, NotifyPolicy
from tests.monitoring.test_payloads import notification
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


@pytest.fixture
def woken(monkeypatch):
    """What the outbox hands to Celery (delivery ids, countdown), instead of a worker."""
    calls = []
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: calls.append((list(ids), countdown_s)))
    return calls


def due_now(delivery_id: int) -> None:
    Delivery.objects.filter(pk=delivery_id).update(next_attempt_at=timezone.now())


def test_a_receiver_failing_three_times_gets_the_event_on_the_fourth_attempt_with_the_same_id(
        receiver, woken, settings, django_capture_on_commit_callbacks):
    settings.STROM_WEBHOOK_RETRY_SCHEDULE_S = (1.0, 2.0, 3.0, 4.0)
    endpoint = WebhookEndpoint.objects.create(name="ops", url=receiver.url)
    receiver.answers = [(503, {}), (500, {}), (429, {"Retry-After": "7"})]
    with django_capture_on_commit_callbacks(execute=True):
        [delivery_id] = outbox.enqueue([notification()])
    assert woken == [([delivery_id], 0.0)]
    for attempt in range(1, 5):
        with django_capture_on_commit_callbacks(execute=True):
            row = outbox.send(delivery_id)
        assert row.attempts == attempt
        assert outbox.send(delivery_id) is None  # not due again yet: nobody sends it twice
        due_now(delivery_id)
    assert [countdown for _, countdown in woken[1:]] == [1.0, 2.0, 7.0]  # the schedule; Retry-After wins
    row = Delivery.objects.get(pk=delivery_id)
    assert (row.state, row.attempts, row.last_status_code, row.finished_at is not None) == (
        Delivery.State.DELIVERED, 4, 200, True)
    assert [(a.number, a.outcome, a.status_code) for a in row.attempt_log.all()] == [
        (1, "retry", 503), (2, "retry", 500), (3, "retry", 429), (4, "delivered", 200)]
    assert len(receiver.requests) == 4
    assert {headers["webhook-id"] for _, _, headers, _ in receiver.requests} == {"evt-7"}
    assert len({body for *_, body in receiver.requests}) == 1
    for _, _, headers, body in receiver.requests:
        assert Webhook(endpoint.secret).verify(body, headers)["type"] == "strom.consumer_group.open"


def test_enqueuing_an_event_twice_sends_it_once(woken):
    WebhookEndpoint.objects.create(name="ops", url="http://127.0.0.1:9/hook")
    assert len(outbox.enqueue([notification()])) == 1
    assert outbox.enqueue([notification()]) == []
    assert Delivery.objects.count() == 1


def test_group_filters_and_disabled_endpoints_choose_who_gets_an_event(woken):
    WebhookEndpoint.objects.create(name="billing-only", url="http://127.0.0.1:9/a", group_allowlist="^bill")
    WebhookEndpoint.objects.create(name="not-billing", url="http://127.0.0.1:9/b", group_denylist="billing")
    WebhookEndpoint.objects.create(name="off", url="http://127.0.0.1:9/c", enabled=False)
    outbox.enqueue([notification()])  # group "billing"
    assert list(Delivery.objects.values_list("endpoint__name", flat=True)) == ["billing-only"]


def test_an_announcement_for_one_subscriber_goes_to_that_endpoint_only(woken):
    ops = WebhookEndpoint.objects.create(name="ops", url="http://127.0.0.1:9/a")
    pager = WebhookEndpoint.objects.create(name="pager", url="http://127.0.0.1:9/b", notify_threshold="ERR",
                                           reminder_interval_s=600)
    outbox.enqueue([dataclasses.replace(notification(), subscriber=str(pager.pk))])
    assert list(Delivery.objects.values_list("endpoint__name", flat=True)) == ["pager"]
    assert policies() == {str(ops.pk): NotifyPolicy(),
                          str(pager.pk): NotifyPolicy(min_status=Status.ERR, reminder_interval_ms=600_000)}


def test_a_template_that_cannot_render_records_a_failed_delivery(woken):
    WebhookEndpoint.objects.create(name="ops", url="http://127.0.0.1:9/hook", template_open="{{ Nope.x }}")
    assert outbox.enqueue([notification()]) == []
    row = Delivery.objects.get()
    assert row.state == Delivery.State.FAILED and "cannot build the body" in row.last_error


def test_410_gone_disables_the_endpoint_and_4xx_fails_without_retry(receiver, woken):
    gone = WebhookEndpoint.objects.create(name="gone", url=receiver.url)
    receiver.answers = [(410, {})]
    [first] = outbox.enqueue([notification()])
    assert outbox.send(first).state == Delivery.State.DISABLED
    gone.refresh_from_db()
    assert not gone.enabled and "410" in gone.disabled_reason
    WebhookEndpoint.objects.create(name="strict", url=receiver.url)
    receiver.answers = [(400, {})]
    [second] = outbox.enqueue([notification(EventKind.CLOSE)])
    row = outbox.send(second)
    assert (row.state, row.next_attempt_at, row.last_status_code) == (Delivery.State.FAILED, None, 400)


def test_the_retry_button_makes_a_finished_delivery_due_again_with_the_same_id(receiver, woken,
                                                                             django_capture_on_commit_callbacks):
    WebhookEndpoint.objects.create(name="ops", url=receiver.url)
    receiver.answers = [(400, {})]
    [delivery_id] = outbox.enqueue([notification()])
    outbox.send(delivery_id)
    with django_capture_on_commit_callbacks(execute=True):
        outbox.retry_now(Delivery.objects.get(pk=delivery_id))
    assert woken[-1] == ([delivery_id], 0.0) and outbox.due_ids() == [delivery_id]
    assert outbox.send(delivery_id).state == Delivery.State.DELIVERED
    assert [h["webhook-id"] for _, _, h, _ in receiver.requests] == ["evt-7", "evt-7"]


def test_a_disabled_endpoint_gets_nothing_more(receiver, woken):
    endpoint = WebhookEndpoint.objects.create(name="ops", url=receiver.url)
    [delivery_id] = outbox.enqueue([notification()])
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    row = outbox.send(delivery_id)
    assert (row.state, row.attempts, receiver.requests) == (Delivery.State.DISABLED, 0, [])
