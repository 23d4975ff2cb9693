"""Webhook delivery attempts (monitoring.notifier.sender, signing) against a real HTTP receiver on
127.0.0.1 that verifies Standard Webhooks signatures with the `standardwebhooks` package."""

import datetime
import json

import pytest
from standardwebhooks import Webhook

from monitoring.notifier.incidents import EventKind
from monitoring.notifier.sender import (
    Outcome,
    Preset,
    WebhookEndpoint,
    attempt,
    prepare,
    retry_delay_s,
)
from monitoring.notifier.signing import new_secret, signed_headers
from tests.monitoring.test_payloads import notification
from tests.support.webhook_receiver import Receiver

SECRET = new_secret()


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


def test_a_signed_delivery_verifies_at_the_receiver(receiver):
    endpoint = WebhookEndpoint(receiver.url, headers={"Authorization": "Bearer t0k"}, secret=SECRET)
    delivery = prepare(endpoint, notification())
    result = attempt(delivery, SECRET)
    assert (result.outcome, result.status_code) == (Outcome.DELIVERED, 200) and result.latency_ms > 0
    method, path, headers, body = receiver.requests[0]
    assert (method, path, headers["content-type"], headers["authorization"]) == (
        "POST", "/hook", "application/json", "Bearer t0k")
    assert headers["webhook-id"] == "evt-7"
    verified = Webhook(SECRET).verify(body, headers)  # raises unless id, timestamp and signature match
    assert verified["type"] == "strom.consumer_group.open" and verified["data"]["group"] == "billing"


def test_a_tampered_body_does_not_verify(receiver):
    attempt(prepare(WebhookEndpoint(receiver.url), notification()), SECRET)
    _, _, headers, body = receiver.requests[0]
    with pytest.raises(Exception, match="(?i)signature|header"):
        Webhook(SECRET).verify(body + b" ", headers)


def test_retries_keep_the_id_and_body_and_sign_each_attempt(receiver):
    receiver.answers = [(503, {}), (503, {}), (503, {})]
    delivery = prepare(WebhookEndpoint(receiver.url, secret=SECRET), notification())
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    outcomes = [attempt(delivery, SECRET, now=start + datetime.timedelta(seconds=10 * i)).outcome for i in range(4)]
    assert outcomes == [Outcome.RETRY, Outcome.RETRY, Outcome.RETRY, Outcome.DELIVERED]
    ids = {headers["webhook-id"] for _, _, headers, _ in receiver.requests}
    bodies = {body for *_, body in receiver.requests}
    stamps = [headers["webhook-timestamp"] for _, _, headers, _ in receiver.requests]
    assert ids == {"evt-7"} and len(bodies) == 1
    assert stamps == [str(int((start + datetime.timedelta(seconds=10 * i)).timestamp())) for i in range(4)]
    assert [retry_delay_s(n) for n in (1, 2, 3)] == [5.0, 300.0, 1800.0]


@pytest.mark.parametrize(("status", "headers", "outcome", "retry_after"), [
    (204, {}, Outcome.DELIVERED, None),
    (410, {}, Outcome.DISABLE, None),
    (429, {"Retry-After": "7"}, Outcome.RETRY, 7.0),
    (502, {}, Outcome.RETRY, None),
    (408, {}, Outcome.RETRY, None),
    (400, {}, Outcome.FAILED, None),
    (404, {}, Outcome.FAILED, None),
    (302, {"Location": "http://127.0.0.1:1/"}, Outcome.FAILED, None),  # redirects are not followed
])
def test_answers_are_classified(receiver, status, headers, outcome, retry_after):
    receiver.answers = [(status, headers)]
    result = attempt(prepare(WebhookEndpoint(receiver.url), notification()))
    assert (result.outcome, result.status_code, result.retry_after_s) == (outcome, status, retry_after)
    assert len(receiver.requests) == 1
    assert (result.error == "") is (outcome is Outcome.DELIVERED)


def test_an_unreachable_receiver_is_retried():
    result = attempt(prepare(WebhookEndpoint("http://127.0.0.1:9/hook", timeout_s=2), notification()))
    assert result.outcome is Outcome.RETRY and result.status_code is None and "ConnectionError" in result.error


@pytest.mark.parametrize(("attempts", "retry_after", "delay"), [
    (0, None, None), (1, None, 5.0), (9, None, 86400.0), (10, None, None), (1, 60.0, 60.0), (2, 60.0, 300.0),
])
def test_retry_schedule(attempts, retry_after, delay):
    assert retry_delay_s(attempts, retry_after) == delay


def test_bodies_per_preset_and_template():
    n = notification()
    templated = WebhookEndpoint("http://x", method="put", template_open='{"g": "{{ Group }}", "e": "{{ Event }}"}',
                                template_close='{"closed": "{{ ID }}"}')
    assert json.loads(prepare(templated, n).body) == {"g": "billing", "e": "open"}
    assert prepare(templated, n).method == "PUT"
    closing = notification(EventKind.CLOSE)
    assert json.loads(prepare(templated, closing).body) == {"closed": "0f3c"}
    assert json.loads(prepare(WebhookEndpoint("http://x", Preset.SLACK), n).body)["text"].startswith("Consumer group")
    teams = json.loads(prepare(WebhookEndpoint("http://x", Preset.TEAMS), n).body)
    assert teams["type"] == "message"
    pagerduty = json.loads(prepare(WebhookEndpoint("http://x", Preset.PAGERDUTY, routing_key="k"), n).body)
    assert pagerduty["routing_key"] == "k"
    with pytest.raises(ValueError, match="routing key"):
        prepare(WebhookEndpoint("http://x", Preset.PAGERDUTY), n)


def test_signed_headers_match_the_reference_library():
    at = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=datetime.UTC)
    headers = signed_headers(SECRET, "msg_1", '{"a":1}', at)
    assert headers["webhook-timestamp"] == str(int(at.timestamp()))
    assert headers["webhook-signature"] == Webhook(SECRET).sign("msg_1", at, '{"a":1}')
    assert SECRET.startswith("whsec_") and new_secret() != SECRET
