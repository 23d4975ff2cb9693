"""The durable webhook outbox: announcements become `Delivery` rows first, then Celery sends them.

    enqueue(notifications)      one row per event and matching enabled endpoint, in one transaction; each
                                is handed to Celery after the commit
    send(delivery_id)           claim the row if due, make one attempt, log it, and reschedule (Celery
                                countdown) or finish it; a row already claimed or not due is left alone
    due_ids()                   pending rows whose time has come: the beat task re-queues them, so a worker
                                or Redis restart loses nothing (the row is the truth, the Celery message a
                                wake-up call)

Claiming is a conditional UPDATE (`next_attempt_at <= now` → now + timeout + margin), so two workers never
attempt one delivery at once, on SQLite and PostgreSQL alike; a worker that dies mid-attempt leaves the row
due again once the claim lapses. Retries follow `STROM_WEBHOOK_RETRY_SCHEDULE_S` (Standard Webhooks'
schedule by default: 5 s, 5 min, 30 min, 2 h, …), a receiver's Retry-After when it asks for longer.
"""

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from monitoring.evaluator import not_found
from monitoring.model import Status
from monitoring.notifier.incidents import EVERYONE, EventKind, Incident, Notification, new_id
from monitoring.notifier.payloads import TemplateError
from monitoring.notifier.sender import Delivery as Prepared
from monitoring.notifier.sender import Outcome, attempt, prepare, retry_delay_s
from monitoring.storage import NameFilter

from .models import Delivery, DeliveryAttempt, WebhookEndpoint

logger = logging.getLogger(__name__)
TEST_GROUP = "strom-test"
CLAIM_MARGIN_S = 30.0
"""How long past its timeout an attempt holds its claim (a worker dead mid-attempt: due again after this)."""


def wake(delivery_ids: Iterable[int], countdown_s: float = 0.0) -> None:
    from .tasks import send_delivery  # tasks imports this module

    for delivery_id in delivery_ids:
        try:
            send_delivery.apply_async((delivery_id,), countdown=countdown_s)
        except Exception as exc:  # noqa: BLE001 (Redis down: the beat sweep sends it later)
            logger.warning("delivery %s: could not queue it (%s); the sweep will", delivery_id, exc)


def store(endpoint: WebhookEndpoint, event: str, subject: str, prepared: Prepared) -> Delivery | None:
    """The pending row for `prepared` (None if this endpoint has this event already)."""
    try:
        with transaction.atomic():
            return Delivery.objects.create(
                endpoint=endpoint, webhook_id=prepared.webhook_id, event=event, subject=subject[:300],
                url=prepared.url, method=prepared.method, headers=dict(prepared.headers), body=prepared.body,
                next_attempt_at=timezone.now())
    except IntegrityError:
        return None


def enqueue(notifications: Sequence[Notification]) -> list[int]:
    """Record every announcement for its subscriber (the enabled endpoint whose `str(pk)` it names; every
    enabled endpoint for `EVERYONE`) if the endpoint's group filter passes, then queue them. An endpoint
    whose template cannot render the event gets a `failed` row saying why."""
    created: list[int] = []
    endpoints = [(e, NameFilter(e.group_allowlist or None, e.group_denylist or None))
                 for e in WebhookEndpoint.objects.filter(enabled=True)]
    with transaction.atomic():
        for notification in notifications:
            group = notification.result.group
            for endpoint, passes in endpoints:
                if notification.subscriber not in (EVERYONE, str(endpoint.pk)) or not passes(group):
                    continue
                try:
                    prepared = prepare(endpoint.spec(), notification)
                except (TemplateError, ValueError) as exc:
                    _failed_to_build(endpoint, notification, exc)
                    continue
                row = store(endpoint, str(notification.kind), group, prepared)
                if row is not None:
                    created.append(row.id)
        transaction.on_commit(lambda: wake(created))
    return created


def _failed_to_build(endpoint: WebhookEndpoint, notification: Notification, exc: Exception) -> None:
    Delivery.objects.get_or_create(
        endpoint=endpoint, webhook_id=notification.event_id,
        defaults={"event": str(notification.kind), "subject": notification.result.group, "url": endpoint.url,
                  "method": endpoint.method, "body": "", "state": Delivery.State.FAILED,
                  "last_error": f"cannot build the body: {exc}", "finished_at": timezone.now()})


def schedule() -> tuple[float, ...]:
    return tuple(settings.STROM_WEBHOOK_RETRY_SCHEDULE_S)


def _claim(delivery_id: int, timeout_s: float) -> bool:
    now = timezone.now()
    return Delivery.objects.filter(pk=delivery_id, state=Delivery.State.PENDING, next_attempt_at__lte=now).update(
        next_attempt_at=now + timedelta(seconds=timeout_s + CLAIM_MARGIN_S)) == 1


def send(delivery_id: int) -> Delivery | None:
    """One attempt of a due pending delivery (None if it is not due, finished, gone or claimed elsewhere)."""
    row = Delivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if row is None or not _claim(row.id, row.endpoint.timeout_s):
        return None
    endpoint = row.endpoint
    if not endpoint.enabled:  # disabled since (by hand, or a 410 on another delivery): nothing more is sent
        Delivery.objects.filter(pk=row.id).update(state=Delivery.State.DISABLED, next_attempt_at=None,
                                                  finished_at=timezone.now(),
                                                  last_error="the endpoint is disabled")
        return Delivery.objects.get(pk=row.id)
    prepared = Prepared(row.webhook_id, row.url, row.method, row.headers, row.body)
    result = attempt(prepared, endpoint.secret or None, endpoint.timeout_s)
    now = timezone.now()
    number = row.attempts + 1
    row.attempts, row.last_status_code = number, result.status_code
    row.last_error, row.last_latency_ms = result.error, result.latency_ms
    delay = None
    if result.outcome is Outcome.DELIVERED:
        row.state = Delivery.State.DELIVERED
    elif result.outcome is Outcome.DISABLE:
        row.state = Delivery.State.DISABLED
    elif result.outcome is Outcome.RETRY:
        delay = retry_delay_s(number, result.retry_after_s, schedule())
        row.state = Delivery.State.PENDING if delay is not None else Delivery.State.GAVE_UP
    else:
        row.state = Delivery.State.FAILED
    row.next_attempt_at = now + timedelta(seconds=delay) if delay is not None else None
    row.finished_at = None if delay is not None else now
    with transaction.atomic():
        DeliveryAttempt.objects.create(delivery=row, number=number, at=now, outcome=str(result.outcome),
                                       status_code=result.status_code, latency_ms=result.latency_ms,
                                       error=result.error)
        row.save(update_fields=["attempts", "last_status_code", "last_error", "last_latency_ms", "state",
                                "next_attempt_at", "finished_at"])
        if result.outcome is Outcome.DISABLE:
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
                enabled=False, disabled_reason=f"the receiver answered 410 Gone at {now:%Y-%m-%d %H:%M:%S} UTC")
    if delay is not None:
        transaction.on_commit(lambda: wake([row.id], delay))
    level = logging.INFO if row.state == Delivery.State.DELIVERED else logging.WARNING
    logger.log(level, "delivery %s (%s %s → %s) attempt %d: %s %s", row.id, row.event, row.subject, endpoint.name,
               number, result.outcome, result.error)
    return row


def due_ids(limit: int = 500) -> list[int]:
    return list(Delivery.objects.filter(state=Delivery.State.PENDING, next_attempt_at__lte=timezone.now())
                .order_by("next_attempt_at").values_list("id", flat=True)[:limit])


def retry_now(delivery: Delivery) -> None:
    """The console's and API's retry button: make a finished or waiting delivery due now (same id and body)."""
    Delivery.objects.filter(pk=delivery.pk).update(state=Delivery.State.PENDING, next_attempt_at=timezone.now(),
                                                   finished_at=None)
    transaction.on_commit(lambda: wake([delivery.pk]))


def send_test(endpoint: WebhookEndpoint, cluster: str = "local") -> Delivery:
    """The "send test" button: a WARN OPEN event for the made-up group `strom-test`, built with the endpoint's
    preset or templates like any announcement and sent through the outbox (a TemplateError/ValueError if
    its body cannot be built)."""
    now_ms = int(timezone.now().timestamp() * 1000)
    event_id = f"test-{new_id()}"
    result = dataclasses.replace(not_found(cluster, TEST_GROUP, now_ms), status=Status.WARN)
    notification = Notification(event_id, EventKind.OPEN, Incident(event_id, cluster, TEST_GROUP, now_ms, Status.WARN),
                                 result, now_ms)
    prepared = prepare(endpoint.spec(), notification)
    row = store(endpoint, "test", TEST_GROUP, prepared)
    transaction.on_commit(lambda: wake([row.id]))
    return row
