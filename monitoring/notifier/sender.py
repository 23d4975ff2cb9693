"""One delivery attempt of an announcement to a webhook endpoint, and what to do next.

`prepare` fixes what is sent (URL, method, headers, body, `webhook-id`) once per endpoint and event, so
every retry sends the same bytes under the same id; `attempt` signs with the attempt's own timestamp,
sends with `requests` (no redirects followed) and classifies the answer the Standard Webhooks way:

    2xx                              DELIVERED
    410 Gone                         DISABLE   (the receiver asks to stop: disable the endpoint)
    408, 429, 5xx, timeout, refused  RETRY     (honour Retry-After when given)
    any other answer (3xx, 4xx)      FAILED    (a retry would get the same answer)

`retry_delay_s` gives the wait before the next attempt (Standard Webhooks' example schedule: 5 s, 5 min,
30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h; about three days in all). Delivery with retries and its log is
the caller's (the control plane's Celery task); nothing here sleeps.
"""

import datetime
import email.utils
import enum
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

from monitoring.notifier.incidents import EventKind, Notification
from monitoring.notifier.payloads import (
    AlertMessage,
    message,
    pagerduty_event,
    render,
    slack_message,
    standard_body,
    teams_message,
    template_context,
)
from monitoring.notifier.signing import signed_headers

RETRY_SCHEDULE_S = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)


class Preset(enum.StrEnum):
    STANDARD = "standard"    # Strom's JSON (standard_body) or the endpoint's templates
    SLACK = "slack"
    TEAMS = "teams"
    PAGERDUTY = "pagerduty"


@dataclass(frozen=True)
class WebhookEndpoint:
    """Where and how to announce. `template_open`/`template_close` (Jinja, Burrow's variables) replace
    the standard body when set (open also serves update and reminder); `secret` (whsec_…) signs;
    `routing_key` is PagerDuty's integration key; `link` is put in chat messages."""

    url: str
    preset: Preset = Preset.STANDARD
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=dict)
    secret: str | None = None
    template_open: str | None = None
    template_close: str | None = None
    extras: Mapping[str, str] = field(default_factory=dict)
    routing_key: str | None = None
    link: str | None = None
    timeout_s: float = 15.0


@dataclass(frozen=True)
class Delivery:
    """What one endpoint gets for one event; identical on every attempt."""

    webhook_id: str
    url: str
    method: str
    headers: Mapping[str, str]
    body: str


class Outcome(enum.StrEnum):
    DELIVERED = "delivered"
    RETRY = "retry"
    FAILED = "failed"
    DISABLE = "disable"


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    status_code: int | None
    latency_ms: float
    error: str = ""
    retry_after_s: float | None = None


def request_body(endpoint: WebhookEndpoint, notification: Notification) -> str:
    """The body `endpoint` gets for a consumer group's `notification` (a TemplateError if its template fails)."""
    return body_for(endpoint, notification.kind, message(notification), lambda: standard_body(notification),
                    lambda: template_context(notification, endpoint.extras))


def body_for(endpoint: WebhookEndpoint, kind: EventKind, alert: AlertMessage, standard: Callable[[], dict],
             context: Callable[[], Mapping[str, Any]]) -> str:
    """The body of any alert by the endpoint's preset: chat and pager messages from `alert`; for the
    standard preset the endpoint's template (open, or close for a CLOSE) rendered with `context()`, else
    the `standard()` JSON. ValueError for a PagerDuty endpoint without a routing key."""
    if endpoint.preset is Preset.SLACK:
        return _json(slack_message(alert, endpoint.link))
    if endpoint.preset is Preset.TEAMS:
        return _json(teams_message(alert, endpoint.link))
    if endpoint.preset is Preset.PAGERDUTY:
        if not endpoint.routing_key:
            raise ValueError("a PagerDuty endpoint needs a routing key")
        return _json(pagerduty_event(alert, endpoint.routing_key))
    template = endpoint.template_close if kind is EventKind.CLOSE else endpoint.template_open
    if template:
        return render(template, context())
    return _json(standard())


def prepare(endpoint: WebhookEndpoint, notification: Notification) -> Delivery:
    return delivery(endpoint, notification.event_id, request_body(endpoint, notification))


def delivery(endpoint: WebhookEndpoint, webhook_id: str, body: str) -> Delivery:
    """What `endpoint` is sent for the event `webhook_id`: its URL, method and headers (JSON content type
    unless the endpoint's headers say otherwise), `body`."""
    headers = {"content-type": "application/json", "user-agent": "strom-lag-monitor",
               **{k.lower(): v for k, v in endpoint.headers.items()}}
    return Delivery(webhook_id, endpoint.url, endpoint.method.upper(), headers, body)


def attempt(delivery: Delivery, secret: str | None = None, timeout_s: float = 15.0,
            session: requests.Session | None = None, now: datetime.datetime | None = None) -> AttemptResult:
    """Send once, signed (when `secret` is set) with this attempt's timestamp, and classify the answer."""
    headers = dict(delivery.headers)
    if secret:
        headers.update(signed_headers(secret, delivery.webhook_id, delivery.body,
                                      now or datetime.datetime.now(datetime.UTC)))
    else:
        headers["webhook-id"] = delivery.webhook_id
    started = time.monotonic()
    try:
        response = (session or requests).request(delivery.method, delivery.url, data=delivery.body.encode(),
                                                 headers=headers, timeout=timeout_s, allow_redirects=False)
    except requests.RequestException as exc:
        return AttemptResult(Outcome.RETRY, None, (time.monotonic() - started) * 1000, f"{type(exc).__name__}: {exc}")
    latency_ms = (time.monotonic() - started) * 1000
    code = response.status_code
    if 200 <= code < 300:
        return AttemptResult(Outcome.DELIVERED, code, latency_ms)
    error = f"HTTP {code}: {response.text[:500]}"
    if code == 410:
        return AttemptResult(Outcome.DISABLE, code, latency_ms, error)
    if code in (408, 429) or code >= 500:
        retry_after_s = _retry_after_s(response.headers.get("retry-after"))
        return AttemptResult(Outcome.RETRY, code, latency_ms, error, retry_after_s)
    return AttemptResult(Outcome.FAILED, code, latency_ms, error)


def retry_delay_s(attempts_made: int, retry_after_s: float | None = None,
                  schedule: Sequence[float] = RETRY_SCHEDULE_S) -> float | None:
    """Seconds to wait after `attempts_made` failed attempts (1 = the first failed) by `schedule`; None =
    give up. A receiver's Retry-After wins when it asks for longer."""
    if attempts_made < 1 or attempts_made > len(schedule):
        return None
    delay = float(schedule[attempts_made - 1])
    return max(delay, retry_after_s) if retry_after_s is not None else delay


def _retry_after_s(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdecimal():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


def _json(body: dict) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)
