"""The console's Reassignments page with Django's test client: preview (a goal, topics onto brokers, errors),
execute, the execution page and its progress JSON, pause/resume/cancel, history; a viewer's buttons are
disabled. The browser flow on a real cluster is tests/integration/cluster/test_reassignment_console.py."""

import re

import pytest
from django.test import Client

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.controller import executor
from controlplane.controller.models import ExecutionState, ReassignmentExecution
from controlplane.metrics.models import PartitionReplicaSize, TopicReplicaSize
from controlplane.topics.models import Partition
from tests.conftest import user_with_role


@pytest.fixture
def ops(cluster):
    """Conftest `cluster` (brokers 1, 2 running, 3 fenced; payments-0 on [1]), payments 3 MB on broker 1."""
    TopicReplicaSize.objects.create(broker_id=1, topic="payments", size_bytes=3_000_000, partitions=1,
                                    sampled_at="2026-01-01T00:00:00Z")
    PartitionReplicaSize.objects.create(broker_id=1, topic="payments", partition=0, log_dir="/d", size_bytes=3_000_000,
                                        log_start_offset=0, log_end_offset=3000, leader=True,
                                        sampled_at="2026-01-01T00:00:00Z")
    client = Client()
    client.force_login(user_with_role("olga", Role.OPERATOR))
    return client


def test_preview_a_goal_shows_moves_and_per_broker_loads(ops):
    page = ops.get("/reassignments/", {"source": "goal", "goal": "replication-factor", "topic": "payments",
                                       "replication_factor": "2"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "Preview: replication factor of payments to 2" in html
    assert re.search(r"<td>payments</td><td>0</td><td><code>1</code></td><td><code>1, 2</code></td><td>2\.9.MB</td>",
                     html)
    assert 'data-broker="2" data-metric="replicas"' in html
    assert 'data-action="start_reassignment"' in html and "disabled" not in html.split('id="execute-form"')[1]
    assert not ReassignmentExecution.objects.exists()  # a preview changes nothing


@pytest.mark.parametrize(("query", "status", "message"), [
    ({"source": "topics", "topics": "payments"}, 400, "Name the topics and the brokers"),
    ({"source": "topics", "topics": "nope", "brokers": "1"}, 404, "Topic nope not found"),
    ({"source": "goal", "goal": "decommission", "brokers": "x"}, 400, "broker ids separated by commas"),
    ({"source": "goal", "goal": "decommission", "brokers": "9"}, 400, "decommission needs running brokers"),
])
def test_preview_errors(ops, query, status, message):
    page = ops.get("/reassignments/", query)
    assert page.status_code == status and message in page.content.decode()


def test_execute_then_follow_pause_resume_and_cancel(ops):
    preview = ops.get("/reassignments/", {"source": "topics", "topics": "payments", "brokers": "2"})
    plan = re.search(r'name="plan" value="([^"]+)"', preview.content.decode()).group(1).replace("&quot;", '"')
    answer = ops.post("/reassignments/execute/", {"plan": plan, "description": "payments onto brokers 2",
                                                  "throttle_mb_s": "1.5", "max_moves_per_broker": "3"})
    execution = ReassignmentExecution.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/reassignments/{execution.pk}/"
    assert (execution.throttle, execution.max_moves_per_broker, execution.created_by.username) == (1_500_000, 3,
                                                                                                  "olga")
    executor.advance()
    assert Partition.objects.get(topic__name="payments").adding_replicas == [2]

    detail = ops.get(f"/reassignments/{execution.pk}/").content.decode()
    assert 'data-task="payments-0"' in detail and "copying" in detail
    assert 'data-action="pause_reassignment"' in detail
    progress = ops.get(f"/reassignments/{execution.pk}/progress/").json()
    assert (progress["state"], progress["tasks"][0]["state"], progress["tasks"][0]["bytes_to_copy"]) == (
        "running", "copying", 3_000_000)

    for verb, state in (("pause", ExecutionState.PAUSED), ("resume", ExecutionState.RUNNING),
                        ("cancel", ExecutionState.CANCELLED)):
        assert ops.post(f"/reassignments/{execution.pk}/{verb}/").status_code == 302
        execution.refresh_from_db()
        assert execution.state == state
    assert Partition.objects.get(topic__name="payments").replicas == [1]
    page = ops.get("/reassignments/").content.decode()
    assert f'href="/reassignments/{execution.pk}/"' in page and "payments onto brokers 2" in page
    assert list(AuditEntry.objects.order_by("pk").values_list("action", "source", "result")) == [
        ("start_reassignment", "console", "ok"), ("pause_reassignment", "console", "ok"),
        ("resume_reassignment", "console", "ok"), ("cancel_reassignment", "console", "ok")]


def test_a_second_execution_is_refused_with_the_reason(ops):
    executor.create(executor.plans.parse_plan(
        '{"partitions": [{"topic": "payments", "partition": 0, "replicas": [2]}]}'), "first")
    answer = ops.post("/reassignments/execute/", {
        "plan": '{"version": 1, "partitions": [{"topic": "payments", "partition": 0, "replicas": [1, 2]}]}',
        "description": "second", "max_moves_per_broker": "10"}, follow=True)
    assert "Not executed: Reassignment" in answer.content.decode()
    assert ReassignmentExecution.objects.count() == 1


def test_a_viewer_sees_the_buttons_disabled(cluster):
    execution = executor.create(executor.plans.parse_plan(
        '{"partitions": [{"topic": "payments", "partition": 0, "replicas": [2]}]}'), "spread")
    client = Client()
    client.force_login(user_with_role("val", Role.VIEWER))
    html = client.get(f"/reassignments/{execution.pk}/").content.decode()
    assert re.search(r'data-action="cancel_reassignment"[^>]*disabled', html)
    assert client.post(f"/reassignments/{execution.pk}/cancel/").status_code == 403
    execution.refresh_from_db()
    assert execution.state == ExecutionState.RUNNING
