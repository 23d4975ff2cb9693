"""The audit log: `record` and the pairing with the check (`access.checks`), retention, the console page (filters,
newest first, pages, CSV) and the read-only REST endpoint."""

import csv
import datetime
import io

import pytest
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from rest_framework.test import APIClient

from controlplane.access import actions, checks
from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry, Result, Source
from controlplane.audit.schedule import TASK, TASK_NAME
from controlplane.audit.services import Actor, prune, record
from controlplane.audit.tasks import prune_audit_log
from controlplane.core.errors import KafkaApiError
from tests.conftest import user_with_role

T0 = datetime.datetime(2024, 3, 1, 12, 0, tzinfo=datetime.UTC)


def add(actor: str, action: str, target: str, result: str = "ok", source: str = "rest", at=T0) -> AuditEntry:
    entry = AuditEntry.objects.create(actor=actor, action=action, target=target, result=result, source=source)
    AuditEntry.objects.filter(pk=entry.pk).update(at=at)  # `at` is set on creation; move it for the test
    return entry


@pytest.fixture
def viewer(db):
    return user_with_role("vera", Role.VIEWER)


def test_record_keeps_who_what_and_the_states(viewer):
    entry = record(Actor(viewer, "10.0.0.1", "ci"), "reset_offsets", "group:etl", {"offsets": {"t-0": 4}},
                   {"offsets": {"t-0": 0}}, Result.OK, Source.REST)
    entry.refresh_from_db()
    assert (entry.actor, entry.user, entry.address, entry.client_id, entry.source) == ("vera", viewer, "10.0.0.1",
                                                                                       "ci", "rest")
    assert (entry.before, entry.after) == ({"offsets": {"t-0": 4}}, {"offsets": {"t-0": 0}})
    assert Actor(address="10.0.0.2", client_id="admin-1").name == "admin-1@10.0.0.2"
    assert Actor(address="10.0.0.2").name == "10.0.0.2"


def test_a_failed_change_is_recorded_with_its_error_and_raised(db):
    operator = user_with_role("olga", Role.OPERATOR)
    with pytest.raises(KafkaApiError), checks.audited(Actor(operator), Source.CLI, actions.DELETE_CONSUMER_GROUP,
                                                      "group:busy") as change:
        change.before = {"offsets": {}}
        raise KafkaApiError("NON_EMPTY_GROUP", "The group is not empty.", 409)
    entry = AuditEntry.objects.get()
    assert (entry.result, entry.detail, entry.before) == ("failed", "NON_EMPTY_GROUP: The group is not empty.",
                                                          {"offsets": {}})


def test_retention_prunes_old_entries_daily(db, settings):
    now = timezone.now()
    old, recent = add("a", "reset_offsets", "group:x", at=now - datetime.timedelta(days=40)), \
        add("b", "reset_offsets", "group:x", at=now - datetime.timedelta(days=20))
    assert prune(30, now) == 1
    assert list(AuditEntry.objects.values_list("pk", flat=True)) == [recent.pk]
    settings.STROM_AUDIT_RETENTION_DAYS = 10
    assert prune_audit_log() == 1 and not AuditEntry.objects.exists()
    assert old.pk != recent.pk
    task = PeriodicTask.objects.get(name=TASK_NAME)  # scheduled by the 0002 migration
    assert (task.task, task.interval.every, task.interval.period, task.enabled) == (TASK, 1, "days", True)
    assert prune_audit_log.name == TASK


@pytest.fixture
def log(db):
    """62 entries a minute apart, newest last: alternately alice (ok) and bob (refused), and one Kafka client."""
    for i in range(61):
        add("alice" if i % 2 == 0 else "bob", "reset_offsets" if i % 2 == 0 else "delete_consumer_group",
            f"group:g{i}", "ok" if i % 2 == 0 else "refused", "console", T0 + datetime.timedelta(minutes=i))
    add("audit-probe@127.0.0.1", "create_topics", "topic:orders", "ok", "kafka", T0 + datetime.timedelta(hours=2))


@pytest.fixture
def console(viewer):
    client = Client()
    client.force_login(viewer)
    return client


def test_console_page_newest_first_paginated(console, log):
    first = console.get("/audit/")
    assert first.status_code == 200
    entries = first.context["entries"]
    assert len(entries) == 50 and entries[0].target == "topic:orders" and entries[1].target == "group:g60"
    assert "page 1 of 2 (62 entries)" in first.content.decode()
    assert [e.target for e in console.get("/audit/?page=2").context["entries"]][-1] == "group:g0"


@pytest.mark.parametrize(("query", "targets"), [
    ("actor=probe", ["topic:orders"]),
    ("actor=127.0.0", ["topic:orders"]),  # a Kafka client's actor names its address
    ("action=delete_consumer_group&target=g5", ["group:g59", "group:g57", "group:g55", "group:g53", "group:g51",
                                                "group:g5"]),
    ("result=refused&since=2024-03-01T12:55:00Z", ["group:g59", "group:g57", "group:g55"]),
    ("source=kafka", ["topic:orders"]),
    ("until=2024-03-01T12:02:00Z", ["group:g1", "group:g0"]),
])
def test_console_filters(console, log, query, targets):
    assert [e.target for e in console.get(f"/audit/?{query}").context["entries"]] == targets


def test_csv_export_applies_the_filters(console, log):
    response = console.get("/audit/export.csv?actor=bob&since=2024-03-01T12:55:00Z")
    assert response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"].startswith('attachment; filename="strom-audit-')
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["actor"], r["action"], r["target"], r["result"]) for r in rows] == [
        ("bob", "delete_consumer_group", f"group:g{i}", "refused") for i in (59, 57, 55)]
    assert rows[0]["at"] == "2024-03-01T12:59:00+00:00" and rows[0]["before"] == "null"


def test_bad_filters_are_shown_not_crashed_on(console, log):
    assert console.get("/audit/?since=yesterday").status_code == 200
    assert console.get("/audit/export.csv?since=yesterday").status_code == 400


def test_rest_endpoint_is_read_only_and_filtered(viewer, log):
    client = APIClient()
    client.force_authenticate(viewer)
    body = client.get("/api/audit/?source=kafka").json()
    assert body["count"] == 1 and body["results"][0]["actor"] == "audit-probe@127.0.0.1"
    assert client.get("/api/audit/?limit=2").json()["results"][1]["target"] == "group:g60"
    entry = AuditEntry.objects.first()
    assert client.post("/api/audit/", {"actor": "me"}).status_code == 405
    assert client.delete(f"/api/audit/{entry.pk}/").status_code == 405
    assert client.patch(f"/api/audit/{entry.pk}/", {"actor": "me"}).status_code == 405
    nobody = APIClient()
    nobody.force_authenticate(user_with_role("nobody", None))
    assert nobody.get("/api/audit/").status_code == 403
    assert APIClient().get("/api/audit/").status_code == 401
