"""Request bodies for an announcement, as pure functions of the `Notification`.

- `render_template`: an operator's Jinja template (sandboxed, undefined names are errors) with Burrow's
  template variables — `Cluster`, `Group`, `ID` (incident id), `Start` (incident start, a UTC datetime),
  `Extras` (the endpoint's string map), `Result` (`Status` renders as "WARN" and compares as its int,
  `Complete`, `Partitions` (non-OK only), `TotalPartitions`, `Maxlag`, `TotalLag`, `Cluster`, `Group`) and
  Burrow's helpers `jsonencoder`, `topicsbystatus`, `partitioncounts`, `add`, `minus`, `multiply`,
  `divide`, `maxlag`, `formattimestamp` — plus Strom's `Event` ("open", "update", "reminder", "close"),
  `EventID` and `LagSeconds`;
- `standard_body`: the default JSON body, in Standard Webhooks' suggested envelope (`type`, `timestamp`,
  `data`);
- presets: `slack_body` (incoming webhook), `teams_body` (Workflows webhook, Adaptive Card),
  `pagerduty_body` (Events API v2, one `dedup_key` per cluster and group so CLOSE resolves the alert).
"""

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from monitoring.burrow_api import commit_json, partition_status
from monitoring.model import GroupResult, PartitionResult, Status
from monitoring.notifier.incidents import EventKind, Notification


class TemplateError(ValueError):
    """The template does not parse or does not render (the message says where)."""


class TemplateStatus(int):
    """A status in templates: renders as Burrow's name ("WARN"), compares as Burrow's int (2)."""

    def __str__(self) -> str:
        return Status(self).name


def _utc(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


@dataclass(frozen=True)
class _Partition:
    """A partition as Burrow's templates see it (Go field names)."""

    Topic: str
    Partition: int
    Owner: str
    ClientID: str
    Status: TemplateStatus
    Start: dict | None
    End: dict | None
    CurrentLag: int
    Complete: float
    LagSeconds: float | None

    @classmethod
    def of(cls, p: PartitionResult) -> "_Partition":
        return cls(p.topic, p.partition, p.owner, p.client_id, TemplateStatus(p.status), commit_json(p.start),
                   commit_json(p.end), p.current_lag, p.complete, p.lag_seconds)

    def __json__(self) -> dict:
        return {"topic": self.Topic, "partition": self.Partition, "owner": self.Owner, "client_id": self.ClientID,
                "status": str(self.Status), "start": self.Start, "end": self.End, "current_lag": self.CurrentLag,
                "complete": self.Complete}


@dataclass(frozen=True)
class _Result:
    """A group result as Burrow's templates see it (`.Result`)."""

    Cluster: str
    Group: str
    Status: TemplateStatus
    Complete: float
    Partitions: list[_Partition]
    TotalPartitions: int
    Maxlag: _Partition | None
    TotalLag: int


def _json_default(value: Any) -> Any:
    if hasattr(value, "__json__"):
        return value.__json__()
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _jsonencoder(value: Any) -> str:
    return json.dumps(value, default=_json_default, separators=(",", ":"))


def _topicsbystatus(partitions: list[_Partition]) -> dict[str, list[str]]:
    by_status: dict[str, list[str]] = {}
    for p in partitions:
        topics = by_status.setdefault(str(p.Status), [])
        if p.Topic not in topics:
            topics.append(p.Topic)
    return by_status


def _partitioncounts(partitions: list[_Partition]) -> dict[str, int]:
    counts = {"warn": 0, "stop": 0, "stall": 0, "rewind": 0, "unknown": 0}
    for p in partitions:
        name = str(p.Status).lower()
        counts[name if name in counts else "unknown"] += 1
    return counts


def _formattimestamp(ms: int, fmt: str = "%Y-%m-%dT%H:%M:%SZ") -> str:
    """Format a ms timestamp in UTC with a strftime format (Burrow takes a Go layout here)."""
    return _utc(ms).strftime(fmt)


_HELPERS = {
    "jsonencoder": _jsonencoder, "topicsbystatus": _topicsbystatus, "partitioncounts": _partitioncounts,
    "add": lambda a, b: a + b, "minus": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a // b, "maxlag": lambda p: p.CurrentLag if p is not None else 0,
    "formattimestamp": _formattimestamp,
}

_ENV = SandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
_ENV.globals.update(_HELPERS)
_ENV.filters.update(_HELPERS)


def template_context(notification: Notification, extras: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Burrow's template variables (and Strom's) for one announcement."""
    result, incident = notification.result, notification.incident
    return {
        "Cluster": result.cluster, "Group": result.group, "ID": incident.id, "Start": _utc(incident.start_ms),
        "Extras": dict(extras or {}), "Result": _template_result(result), "Event": str(notification.kind),
        "EventID": notification.event_id, "LagSeconds": result.lag_seconds,
    }


def _template_result(result: GroupResult) -> _Result:
    return _Result(result.cluster, result.group, TemplateStatus(result.status), result.complete,
                   [_Partition.of(p) for p in result.problem_partitions], result.partition_count,
                   _Partition.of(result.maxlag) if result.maxlag else None, result.totallag)


def check_template(source: str) -> None:
    """Raise TemplateError if `source` does not parse (what a form validates before saving)."""
    try:
        _ENV.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"line {exc.lineno}: {exc.message}") from exc


def render_template(source: str, notification: Notification, extras: Mapping[str, str] | None = None) -> str:
    return render(source, template_context(notification, extras))


def render(source: str, context: Mapping[str, Any]) -> str:
    """Render an operator's template (sandboxed, strict) with `context`; TemplateError on any failure."""
    try:
        return _ENV.from_string(source).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"line {exc.lineno}: {exc.message}") from exc
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as exc:
        raise TemplateError(str(exc)) from exc


def _iso(ms: int) -> str:
    return _utc(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def summary(notification: Notification) -> str:
    """One line for chat and pager targets."""
    result = notification.result
    if notification.kind is EventKind.CLOSE:
        return f"Consumer group {result.group} on {result.cluster} is OK again"
    status = "threshold breached" if result.threshold_breached and result.status < Status.ERR else result.status.name
    seconds = f", {result.lag_seconds:.0f} s behind" if result.lag_seconds else ""
    return f"Consumer group {result.group} on {result.cluster} is {status} (lag {result.totallag}{seconds})"


def standard_body(notification: Notification) -> dict:
    """Strom's default body: Standard Webhooks' envelope with type `strom.consumer_group.<event>`."""
    result, incident = notification.result, notification.incident
    return {
        "type": f"strom.consumer_group.{notification.kind}",
        "timestamp": _iso(notification.sent_ms),
        "data": {
            "incident": incident.id, "cluster": result.cluster, "group": result.group,
            "status": result.status.name, "alert_status": incident.status.name
            if notification.kind is not EventKind.CLOSE else "OK",
            "start": _iso(incident.start_ms), "complete": result.complete, "totallag": result.totallag,
            "lag_seconds": result.lag_seconds, "threshold_breached": result.threshold_breached,
            "partition_count": result.partition_count,
            "partitions": [partition_status(p) for p in result.problem_partitions],
            "maxlag": partition_status(result.maxlag) if result.maxlag else None,
        },
    }


@dataclass(frozen=True)
class AlertMessage:
    """What chat and pager targets show of any alert (a consumer group's, or a cluster alert the control
    plane raises): one summary line, detail lines, and PagerDuty's fields (`dedup_key` stable per alerted
    thing, so a resolve closes the trigger; `severity` critical|error|warning|info)."""

    summary: str
    lines: tuple[str, ...]
    resolve: bool
    dedup_key: str
    severity: str
    source: str
    component: str
    group: str
    alert_class: str
    timestamp_ms: int
    custom_details: Mapping[str, Any]


def message(notification: Notification) -> AlertMessage:
    """A consumer group's announcement as an AlertMessage."""
    result = notification.result
    problems = result.problem_partitions
    return AlertMessage(
        summary=summary(notification),
        lines=tuple(f"{p.status.name} {p.topic}:{p.partition} lag {p.current_lag}" for p in problems[:20]),
        resolve=notification.kind is EventKind.CLOSE, dedup_key=f"strom:{result.cluster}:{result.group}",
        severity="warning" if notification.incident.status == Status.WARN else "error",
        source=f"strom-{result.cluster}", component=result.group, group=result.cluster, alert_class="consumer-lag",
        timestamp_ms=notification.sent_ms,
        custom_details={"status": result.status.name, "totallag": result.totallag, "lag_seconds": result.lag_seconds,
                        "incident": notification.incident.id,
                        "partitions": [partition_status(p) for p in problems[:50]]})


def slack_message(alert: AlertMessage, link: str | None = None) -> dict:
    """A Slack incoming-webhook message: `text` (the notification fallback) and one mrkdwn section."""
    detail = alert.summary if link is None else f"{alert.summary}\n<{link}|Open in Strom>"
    return {"text": alert.summary, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": detail}}]}


def teams_message(alert: AlertMessage, link: str | None = None) -> dict:
    """A Microsoft Teams Workflows webhook message carrying one Adaptive Card."""
    body: list[dict] = [{"type": "TextBlock", "text": alert.summary, "wrap": True, "weight": "Bolder"}]
    body += [{"type": "TextBlock", "wrap": True, "text": line} for line in alert.lines]
    card: dict[str, Any] = {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
                            "version": "1.4", "body": body}
    if link is not None:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Open in Strom", "url": link}]
    return {"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
                                                "contentUrl": None, "content": card}]}


def pagerduty_event(alert: AlertMessage, routing_key: str) -> dict:
    """A PagerDuty Events API v2 event: trigger, or resolve (same `dedup_key`)."""
    dedup_key = alert.dedup_key[:255]
    if alert.resolve:
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup_key}
    return {
        "routing_key": routing_key, "event_action": "trigger", "dedup_key": dedup_key,
        "payload": {"summary": alert.summary[:1024], "source": alert.source, "severity": alert.severity,
                    "timestamp": _iso(alert.timestamp_ms), "component": alert.component, "group": alert.group,
                    "class": alert.alert_class, "custom_details": dict(alert.custom_details)},
    }


def slack_body(notification: Notification, link: str | None = None) -> dict:
    return slack_message(message(notification), link)


def teams_body(notification: Notification, link: str | None = None) -> dict:
    return teams_message(message(notification), link)


def pagerduty_body(notification: Notification, routing_key: str) -> dict:
    """Trigger (severity warning for WARN, error otherwise) or resolve, one `dedup_key` per cluster and group."""
    return pagerduty_event(message(notification), routing_key)
