"""Webhook bodies (monitoring.notifier.payloads): Burrow's template variables and helpers, Strom's
standard body and the Slack, Teams and PagerDuty presets."""

import json

import pytest

from monitoring.model import Status
from monitoring.notifier.incidents import Announced, EventKind, Incident, Notification
from monitoring.notifier.payloads import (
    TemplateError,
    check_template,
    pagerduty_body,
    render_template,
    slack_body,
    standard_body,
    teams_body,
)
from tests.monitoring.factories import group, partition

START = 1_700_000_000_000


def notification(kind=EventKind.OPEN, status=Status.ERR, seconds=42.0) -> Notification:
    result = group(partition(Status.STOP, number=0, lag=250, seconds=seconds),
                   partition(Status.OK, number=1, lag=5), partition(Status.WARN, topic="audit", lag=50))
    incident = Incident("0f3c", "prod", "billing", START, status, {"ops": Announced(status, START)})
    return Notification("evt-7", kind, incident, result, START + 30_000)


@pytest.mark.parametrize(("template", "expected"), [
    ("{{ ID }} {{ Cluster }} {{ Group }} {{ Result.Status }}", "0f3c prod billing ERR"),  # Burrow's own test
    ("{% if Result.Status == 3 %}ERR{% endif %}", "ERR"),                               # compares as the int
    ("{{ Start.strftime('%b %d, %Y %H:%M:%S UTC') }}", "Nov 14, 2023 22:13:20 UTC"),
    ("{{ Extras['tier'] }}", "gold"),
    ("{{ Result.TotalPartitions }} {{ Result.TotalLag }} {{ Result.Complete }}", "3 305 1.0"),
    ("{{ Result.Partitions | length }} {{ Result.Maxlag.Topic }}:{{ Result.Maxlag.Partition }}", "2 orders:0"),
    ("{{ maxlag(Result.Maxlag) }} {{ add(1, 2) }} {{ minus(5, 2) }} {{ multiply(2, 3) }} {{ divide(7, 2) }}",
     "250 3 3 6 3"),
    ("{{ partitioncounts(Result.Partitions) | tojson }}",
     '{"rewind": 0, "stall": 0, "stop": 1, "unknown": 0, "warn": 1}'),
    ("{{ topicsbystatus(Result.Partitions) | tojson }}", '{"STOP": ["orders"], "WARN": ["audit"]}'),
    ("{{ formattimestamp(Result.Maxlag.End.timestamp) }}", "2023-11-14T22:14:20Z"),
    ("{{ Event }} {{ EventID }} {{ LagSeconds }}", "open evt-7 42.0"),
])
def test_burrow_template_variables(template, expected):
    assert render_template(template, notification(), {"tier": "gold"}) == expected


def test_jsonencoder_gives_burrows_partition_json():
    rendered = render_template("{{ Result.Partitions | jsonencoder }}", notification())
    first = json.loads(rendered)[0]
    assert first == {"topic": "orders", "partition": 0, "owner": "/10.0.0.1", "client_id": "app-1",
                     "status": "STOP", "start": {"offset": 90, "timestamp": 1_700_000_000_000,
                                                 "observedAt": 1_700_000_000_500, "lag": 260},
                     "end": {"offset": 100, "timestamp": 1_700_000_060_000, "observedAt": 1_700_000_060_500,
                             "lag": 250},
                     "current_lag": 250, "complete": 1}


@pytest.mark.parametrize(("template", "message"), [
    ("{{ Id }}", "'Id' is undefined"),                 # Burrow's shipped close template has this bug: caught here
    ("{{ Result.Nope }}", "Nope"),
    ("{% if %}", "line 1"),
    ("{{ ''.__class__.__mro__ }}", "unsafe"),         # sandboxed
])
def test_template_errors(template, message):
    with pytest.raises(TemplateError, match=message):
        render_template(template, notification())


def test_check_template():
    check_template("{{ Group }}")
    with pytest.raises(TemplateError, match="line 2"):
        check_template("ok\n{% for %}")


def test_standard_body():
    body = standard_body(notification())
    assert body["type"] == "strom.consumer_group.open"
    assert body["timestamp"] == "2023-11-14T22:13:50.000Z"
    data = body["data"]
    assert (data["incident"], data["cluster"], data["group"], data["status"], data["alert_status"]) == (
        "0f3c", "prod", "billing", "ERR", "ERR")
    assert (data["start"], data["totallag"], data["lag_seconds"], data["partition_count"]) == (
        "2023-11-14T22:13:20.000Z", 305, 42.0, 3)
    assert [p["status"] for p in data["partitions"]] == ["STOP", "WARN"]
    assert data["maxlag"]["current_lag"] == 250
    assert standard_body(notification(EventKind.CLOSE))["data"]["alert_status"] == "OK"


def test_slack_preset():
    body = slack_body(notification(), link="https://strom.example/groups/billing")
    assert body["text"] == "Consumer group billing on prod is ERR (lag 305, 42 s behind)"
    assert body["blocks"][0]["text"]["type"] == "mrkdwn"
    assert "<https://strom.example/groups/billing|Open in Strom>" in body["blocks"][0]["text"]["text"]
    assert slack_body(notification(EventKind.CLOSE))["text"] == "Consumer group billing on prod is OK again"


def test_teams_preset_is_an_adaptive_card():
    body = teams_body(notification())
    assert body["type"] == "message"
    attachment = body["attachments"][0]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.4")
    assert [block["text"] for block in card["body"]][1:] == ["STOP orders:0 lag 250", "WARN audit:0 lag 50"]


def test_pagerduty_trigger_and_resolve_share_the_dedup_key():
    trigger = pagerduty_body(notification(), "R" * 32)
    resolve = pagerduty_body(notification(EventKind.CLOSE), "R" * 32)
    assert (trigger["event_action"], resolve["event_action"]) == ("trigger", "resolve")
    assert trigger["dedup_key"] == resolve["dedup_key"] == "strom:prod:billing"
    assert trigger["payload"]["severity"] == "error" and trigger["payload"]["source"] == "strom-prod"
    assert pagerduty_body(notification(status=Status.WARN), "k")["payload"]["severity"] == "warning"
    assert set(resolve) == {"routing_key", "event_action", "dedup_key"}
