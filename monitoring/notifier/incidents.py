"""When to notify (Burrow's notifier coordinator, rethought): one incident per group while its alert
status is at least `min_status`; notifications on status change only.

Per evaluation of a group (`decide`), given its open incident (if any):

    no incident, status >= min_status      → open an incident; announce OPEN
    incident, status below min_status      → close it; announce CLOSE if anything was announced
      (or the group disappeared: NOTFOUND)
    incident, status changed since the last announcement → UPDATE (same incident id)
    incident, unchanged, `reminder_interval_ms` elapsed since the last announcement → REMINDER
    otherwise                               → nothing

A silence covering the group holds back OPEN/UPDATE/REMINDER while it lasts (the incident is still
tracked; what is due is announced when the silence ends). A CLOSE is never held back once an OPEN went
out, so receivers are not left with a dangling incident. Times are ms since the epoch.
"""

import dataclasses
import enum
import fnmatch
import uuid
from collections.abc import Callable, Sequence
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
class Incident:
    """A group's problem from the first bad evaluation until it is OK again. `status` is the current
    alert status; `notified_status` the last one announced (None: nothing announced yet, e.g. silenced);
    `notified_ms` when (0: never)."""

    id: str
    cluster: str
    group: str
    start_ms: int
    status: Status
    notified_status: Status | None = None
    notified_ms: int = 0


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
    min_status: Status = Status.WARN  # Burrow's `threshold`: WARN (2) or ERR (3)
    reminder_interval_ms: int | None = None  # None: status changes only (Burrow re-sends every interval)
    send_close: bool = True


@dataclass(frozen=True)
class Notification:
    """One event to announce. `event_id` is unique per event and stays the same on every delivery attempt
    (the Standard Webhooks `webhook-id`)."""

    event_id: str
    kind: EventKind
    incident: Incident
    result: GroupResult
    sent_ms: int


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


def decide(result: GroupResult, incident: Incident | None, now_ms: int, policy: NotifyPolicy,
           silences: Sequence[Silence] = (), make_id: Callable[[], str] = new_id) -> Decision:
    """The incident after this evaluation and what to announce (see the module docstring)."""
    status = alert_status(result)
    bad = status >= policy.min_status and status != Status.NOTFOUND
    if incident is None:
        if not bad:
            return Decision(None)
        incident = Incident(make_id(), result.cluster, result.group, now_ms, status)
    elif not bad:
        if policy.send_close and incident.notified_status is not None:
            return Decision(None, (Notification(make_id(), EventKind.CLOSE, incident, result, now_ms),))
        return Decision(None)
    else:
        incident = dataclasses.replace(incident, status=status)
    if any(s.covers(result.cluster, result.group, now_ms) for s in silences):
        return Decision(incident)
    if incident.notified_status is None:
        kind = EventKind.OPEN
    elif status != incident.notified_status:
        kind = EventKind.UPDATE
    elif policy.reminder_interval_ms is not None and now_ms - incident.notified_ms >= policy.reminder_interval_ms:
        kind = EventKind.REMINDER
    else:
        return Decision(incident)
    incident = dataclasses.replace(incident, notified_status=status, notified_ms=now_ms)
    return Decision(incident, (Notification(make_id(), kind, incident, result, now_ms),))
