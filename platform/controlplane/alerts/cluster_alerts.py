"""Alert sources besides consumer lag, read from the metadata store by a Celery beat task every 15 s: a broker
that is not running (after `STROM_ALERT_BROKER_DOWN_GRACE_S`, 30), a partition without a running leader
(offline, at once) and a partition whose ISR is smaller than its replicas for `STROM_ALERT_UNDER_REPLICATED_
GRACE_S` (60). Each problem is announced once when it opens and once when it ends, through the same outbox,
endpoints, presets and signing as consumer-group alerts (events `strom.cluster.<kind>.open|close`; the chat and
PagerDuty presets get an AlertMessage; an endpoint's Jinja templates get `Cluster`, `Event`, `EventID`, `Kind`,
`Subject`, `Detail`, `Start`, `Extras`).

Invariant: at most one unresolved `ClusterAlert` per key (a partial unique constraint); `check` is idempotent
for a given state of the cluster, so overlapping runs announce nothing twice (the outbox's (endpoint,
webhook-id) uniqueness backs that up).
"""

import datetime
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from controlplane.cluster.models import Broker, BrokerState
from controlplane.health.snapshot import partition_problems, running_broker_ids
from monitoring.notifier.incidents import EventKind
from monitoring.notifier.payloads import AlertMessage, TemplateError
from monitoring.notifier.sender import body_for, delivery

from . import outbox
from .models import ClusterAlert, Delivery, WebhookEndpoint

logger = logging.getLogger(__name__)
BROKER_DOWN, OFFLINE, UNDER_REPLICATED = "broker-down", "offline-partition", "under-replicated-partition"


@dataclass(frozen=True)
class Problem:
    kind: str
    subject: str
    detail: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.subject}"


def grace_s(kind: str) -> float:
    return {BROKER_DOWN: settings.STROM_ALERT_BROKER_DOWN_GRACE_S,
            UNDER_REPLICATED: settings.STROM_ALERT_UNDER_REPLICATED_GRACE_S}.get(kind, 0.0)


def current_problems() -> dict[str, Problem]:
    running = running_broker_ids()
    found = [Problem(BROKER_DOWN, str(b.broker_id), f"broker {b.broker_id} is {b.state}")
             for b in Broker.objects.exclude(state=BrokerState.RUNNING)]
    _, problems = partition_problems(running)
    found += [Problem(OFFLINE, f"{p.topic.name}-{p.partition}", f"no running leader (replicas {p.replicas})")
              for p in problems.offline]
    found += [Problem(UNDER_REPLICATED, f"{p.topic.name}-{p.partition}",
                      f"ISR {p.isr} of replicas {p.replicas}") for p in problems.under_replicated]
    return {p.key: p for p in found}


def check(now: datetime.datetime | None = None) -> list[tuple[str, str]]:
    """Open, announce and resolve alerts for the cluster as it is now; returns the (event, key) announced."""
    now = now or timezone.now()
    problems = current_problems()
    announced: list[tuple[str, str]] = []
    with transaction.atomic():
        live = {a.key: a for a in ClusterAlert.objects.select_for_update().filter(resolved_at__isnull=True)}
        for key, alert in live.items():
            if key in problems:
                continue
            if alert.opened_at is None:
                alert.delete()  # over before it was announced
            else:
                alert.resolved_at = now
                alert.save(update_fields=["resolved_at"])
                announced.append(("close", key))
                _announce(alert, EventKind.CLOSE, now)
        for key, problem in problems.items():
            alert = live.get(key) or ClusterAlert.objects.create(
                key=key, kind=problem.kind, subject=problem.subject, detail=problem.detail,
                alert_id=uuid.uuid4().hex, first_seen_at=now)
            if alert.opened_at is None and (now - alert.first_seen_at).total_seconds() >= grace_s(problem.kind):
                alert.opened_at, alert.detail = now, problem.detail
                alert.save(update_fields=["opened_at", "detail"])
                announced.append(("open", key))
                _announce(alert, EventKind.OPEN, now)
    return announced


def _message(alert: ClusterAlert, kind: EventKind, now: datetime.datetime) -> AlertMessage:
    resolved = kind is EventKind.CLOSE
    what = alert.kind.replace("-", " ")
    summary = f"{what} {alert.subject}: " + ("resolved" if resolved else alert.detail)
    return AlertMessage(summary=summary, lines=() if resolved else (alert.detail,), resolve=resolved,
                        dedup_key=f"strom:cluster:{alert.key}",
                        severity="critical" if alert.kind != UNDER_REPLICATED else "warning",
                        source="strom", component=alert.subject, group="cluster", alert_class=alert.kind,
                        timestamp_ms=int(now.timestamp() * 1000),
                        custom_details={"kind": alert.kind, "subject": alert.subject, "detail": alert.detail})


def _standard(alert: ClusterAlert, kind: EventKind, now: datetime.datetime) -> dict:
    return {"type": f"strom.cluster.{alert.kind}.{kind}", "timestamp": now.isoformat().replace("+00:00", "Z"),
            "data": {"alert": alert.alert_id, "kind": alert.kind, "subject": alert.subject, "detail": alert.detail,
                     "start": (alert.opened_at or now).isoformat().replace("+00:00", "Z")}}


def _context(alert: ClusterAlert, kind: EventKind, webhook_id: str, extras: Mapping) -> dict:
    return {"Cluster": "local", "Event": str(kind), "EventID": webhook_id, "Kind": alert.kind,
            "Subject": alert.subject, "Detail": alert.detail, "Start": alert.opened_at, "Extras": dict(extras)}


def _announce(alert: ClusterAlert, kind: EventKind, now: datetime.datetime) -> None:
    webhook_id = f"{alert.alert_id}-{kind}"
    message = _message(alert, kind, now)
    created = []
    for endpoint in WebhookEndpoint.objects.filter(enabled=True):
        spec = endpoint.spec()
        try:
            body = body_for(spec, kind, message, lambda: _standard(alert, kind, now),
                            lambda spec=spec: _context(alert, kind, webhook_id, spec.extras))
        except (TemplateError, ValueError) as exc:
            Delivery.objects.get_or_create(endpoint=endpoint, webhook_id=webhook_id, defaults={
                "event": f"cluster-{kind}", "subject": alert.key, "url": endpoint.url, "method": endpoint.method,
                "body": "", "state": Delivery.State.FAILED, "last_error": f"cannot build the body: {exc}",
                "finished_at": now})
            continue
        row = outbox.store(endpoint, f"cluster-{kind}", alert.key, delivery(spec, webhook_id, body))
        if row is not None:
            created.append(row.id)
    transaction.on_commit(lambda: outbox.wake(created))
    logger.warning("cluster alert %s %s: %s", kind, alert.key, alert.detail)
