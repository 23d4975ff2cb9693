"""When to notify (Burrow's notifier coordinator, rethought): one incident per group while its alert
status is WARN or worse; each subscriber (a webhook endpoint) is told of it under its own `NotifyPolicy`
(Burrow's per-module `threshold` and `send-interval`), on status change only.

Per evaluation of a group (`decide`), given its open incident (if any):

    no incident, status WARN or worse      → open an incident (whatever the subscribers' thresholds)
    incident, status OK (or the group disappeared: NOTFOUND)
                                           → close it; CLOSE to every subscriber that was told of it
    otherwise, per subscriber, from what it was last told (`Incident.notified[subscriber]`):
      nothing yet, status >= its min_status          → OPEN
      told, status changed since                     → UPDATE (same incident id; a subscriber once told
                                                       follows every change, below its threshold too)
      told, unchanged, its `reminder_interval_ms` elapsed since → REMINDER (never when it is None)
      else                                           → nothing

A silence covering the group holds back OPEN/UPDATE/REMINDER while it lasts (the incident is still
tracked; what is due is announced when the silence ends). A CLOSE is never held back once an OPEN went
out, so receivers are not left with a dangling incident. Times are ms since the epoch.
"""

import dataclasses
import enum
import fnmatch
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from monitoring.model import GroupResult, Status
from monitoring.thresholds import alert_status


class EventKind(enum.StrEnum):
    OPEN = "open"
    UPDATE = "update"
    REMINDER = "reminder"
    CLOSE = "close"


@dataclass(frozen=True)
class Announced:
    """What a subscriber was last told of an incident, and when (ms since the epoch)."""

    status: Status
    at_ms: int


@dataclass(frozen=True)
class Incident:
    """A group's problem from the first bad evaluation until it is OK again. `status` is the current
    alert status; `notified` what each subscriber was last told (absent: nothing yet — silenced, or below
    its threshold)."""

    id: str
    cluster: str
    group: str
    start_ms: int
    status: Status
    notified: Mapping[str, Announced] = dataclasses.field(default_factory=dict)

    @property
    def last_announced(self) -> Announced | None:
        """The latest announcement to any subscriber (None: nobody was told yet)."""
        return max(self.notified.values(), key=lambda a: a.at_ms, default=None)

    @property
    def notified_status(self) -> Status | None:
        last = self.last_announced
        return last.status if last else None

    @property
    def notified_ms(self) -> int:
        last = self.last_announced
        return last.at_ms if last else 0


@dataclass(frozen=True)
class Silence:
    """No announcements for groups matching `group` (a shell glob; an exact name matches itself) on
    clusters matching `cluster`, from `starts_ms` until `ends_ms` (exclusive)."""

    group: str
    ends_ms: int
    starts_ms: int = 0
    cluster: str = "*"
    comment: str = ""

    def covers(self, cluster: str, group: str, now_ms: int) -> bool:
        return (self.starts_ms <= now_ms < self.ends_ms and fnmatch.fnmatchcase(group, self.group)
                and fnmatch.fnmatchcase(cluster, self.cluster))


@dataclass(frozen=True)
class NotifyPolicy:
    """One subscriber's rules: `min_status` is Burrow's `threshold` (WARN or ERR: the status that opens an
    incident for it); `reminder_interval_ms` re-announces an unchanged open incident that long after the
    subscriber was last told (None: status changes only; Burrow re-sends every `send-interval`)."""

    min_status: Status = Status.WARN
    reminder_interval_ms: int | None = None
    send_close: bool = True


EVERYONE = "*"
"""The subscriber key of a monitor with one policy for all its sinks' endpoints."""


@dataclass(frozen=True)
class Notification:
    """One event to announce. `event_id` is unique per event and stays the same on every delivery attempt
    (the Standard Webhooks `webhook-id`)."""

    event_id: str
    kind: EventKind
    incident: Incident
    result: GroupResult
    sent_ms: int
    subscriber: str = EVERYONE


@dataclass(frozen=True)
class Decision:
    incident: Incident | None  # None: no incident (any previous one is closed)
    notifications: tuple[Notification, ...] = ()


class IncidentStore(Protocol):
    """Where open incidents live across restarts (the control plane keeps them in its database)."""

    def open_incidents(self) -> list[Incident]: ...

    def update_incidents(self, saved: Sequence[Incident], closed: Sequence[tuple[Incident, int]]) -> None:
        """One evaluation round's changes at once: insert or update each of `saved` by `incident.id`, close
        each of `closed` at its time (ms). One call per round, whatever the number of groups: a round can
        open thousands of incidents (a cluster-wide stall), so a store writes them in one go."""


def new_id() -> str:
    return uuid.uuid4().hex


def decide(result: GroupResult, incident: Incident | None, now_ms: int, policies: Mapping[str, NotifyPolicy],
           silences: Sequence[Silence] = (), make_id: Callable[[], str] = new_id) -> Decision:
    """The incident after this evaluation and what to announce to each subscriber in `policies` (see the
    module docstring)."""
    status = alert_status(result)
    bad = status >= Status.WARN and status != Status.NOTFOUND
    if incident is None:
        if not bad:
            return Decision(None)
        incident = Incident(make_id(), result.cluster, result.group, now_ms, status)
    elif not bad:
        return Decision(None, tuple(Notification(make_id(), EventKind.CLOSE, incident, result, now_ms, key)
                                    for key, policy in policies.items()
                                    if policy.send_close and key in incident.notified))
    else:
        incident = dataclasses.replace(incident, status=status)
    if any(s.covers(result.cluster, result.group, now_ms) for s in silences):
        return Decision(incident)
    due = [(key, kind) for key, policy in policies.items()
           if (kind := _announcement(status, incident.notified.get(key), now_ms, policy)) is not None]
    if not due:
        return Decision(incident)
    told = Announced(status, now_ms)
    incident = dataclasses.replace(incident, notified={**incident.notified, **{key: told for key, _ in due}})
    return Decision(incident, tuple(Notification(make_id(), kind, incident, result, now_ms, key) for key, kind in due))


def _announcement(status: Status, last: Announced | None, now_ms: int, policy: NotifyPolicy) -> EventKind | None:
    """What one subscriber is due for an open, unsilenced incident now at `status`."""
    if last is None:
        return EventKind.OPEN if status >= policy.min_status else None
    if status != last.status:
        return EventKind.UPDATE
    if policy.reminder_interval_ms is not None and now_ms - last.at_ms >= policy.reminder_interval_ms:
        return EventKind.REMINDER
    return None
