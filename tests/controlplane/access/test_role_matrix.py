"""Who may do what, table-driven: every role (and no role) × every mutating action × each front end that offers
it (console, REST API, management command). An allowed action changes the cluster and is recorded `ok`; a refused
one answers 403 (console, REST) or exits non-zero with the reason (command line), changes nothing and is recorded
`refused` — in both cases with the user as actor and the front end as source."""

import re
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Count
from django.test import Client
from django_celery_beat.models import PeriodicTask
from rest_framework.test import APIClient

from controlplane.access import actions
from controlplane.access.actions import Action, Role
from controlplane.access.models import ApiToken
from controlplane.access.roles import role_of
from controlplane.alerts.models import LagThreshold, WebhookEndpoint
from controlplane.audit.models import AuditEntry
from controlplane.cluster.models import Broker, BrokerState
from controlplane.controller.models import ExecutionState, ReassignmentExecution, ReassignmentTask
from controlplane.groups import kafka_client
from controlplane.groups.kafka_client import TopicPartition
from controlplane.reports.models import ReportRun
from controlplane.topics.models import Partition, Topic
from tests.conftest import PASSWORD, user_with_role
from tests.controlplane.groups.conftest import FakeGroupAdmin, FakeLog

ETL_0 = TopicPartition("events", 0)
PLANS = Path(__file__).parent
THRESHOLD_ID = 41
ENDPOINT_ID = 43


@dataclass(frozen=True)
class Mutation:
    action: Action
    source: str  # "console", "rest" or "cli"
    request: tuple  # console/rest: (method, path, data); cli: command arguments
    changes: bool = True  # False for an action that only leads to a preview (checked and audited all the same)

    def __str__(self) -> str:
        return f"{self.action.name}-{self.source}"


MUTATIONS = [
    Mutation(actions.RESET_OFFSETS, "console", ("post", "/groups/etl/reset-offsets/",
                                                {"spec": "to-earliest", "mode": "execute"})),
    Mutation(actions.RESET_OFFSETS, "rest", ("post", "/api/groups/etl/reset-offsets/",
                                             {"all_topics": True, "spec": "to-earliest", "dry_run": False})),
    Mutation(actions.RESET_OFFSETS, "cli", ("consumer_groups", "--reset-offsets", "--group", "etl", "--all-topics",
                                            "--to-earliest", "--execute")),
    Mutation(actions.DELETE_CONSUMER_GROUP, "console", ("post", "/groups/etl/delete/", {"confirm": "yes"})),
    Mutation(actions.DELETE_CONSUMER_GROUP, "rest", ("delete", "/api/groups/etl/", None)),
    Mutation(actions.DELETE_CONSUMER_GROUP, "cli", ("consumer_groups", "--delete", "--group", "etl")),
    Mutation(actions.ELECT_PREFERRED_LEADERS, "console", ("post", "/brokers/elect-leaders/",
                                                          {"election_type": "preferred"})),
    Mutation(actions.ELECT_PREFERRED_LEADERS, "rest", ("post", "/api/elect-leaders/", {"election_type": "preferred"})),
    Mutation(actions.ELECT_PREFERRED_LEADERS, "cli", ("elect_leaders",)),
    Mutation(actions.ELECT_UNCLEAN_LEADERS, "console", ("post", "/brokers/elect-leaders/",
                                                        {"election_type": "unclean", "topic": "orders"})),
    Mutation(actions.ELECT_UNCLEAN_LEADERS, "rest", ("post", "/api/elect-leaders/", {"election_type": "unclean"})),
    Mutation(actions.ELECT_UNCLEAN_LEADERS, "cli", ("elect_leaders", "--election-type", "unclean")),
    Mutation(actions.CREATE_TOKEN, "console", ("post", "/tokens/new/", {"name": "ci"})),
    Mutation(actions.CREATE_TOKEN, "rest", ("post", "/api/token/", {"username": "alice", "password": PASSWORD,
                                                                    "name": "ci"})),
    Mutation(actions.REVOKE_USER_TOKEN, "console", ("post", "/tokens/revoke/", "bob's token")),
    Mutation(actions.SET_ROLE, "cli", ("set_role", "bob", "admin")),
    # issue 13: reassignments (the world has orders-1 reassigning, hence --additional)
    Mutation(actions.START_REASSIGNMENT, "cli", ("reassign_partitions", "--execute", "--additional",
                                                 "--reassignment-json-file", str(PLANS / "payments-to-broker-2.json"))),
    Mutation(actions.START_REASSIGNMENT, "rest", ("post", "/api/reassignments/", {
        "partitions": [{"topic": "payments", "partition": 0, "replicas": [2]}], "additional": True})),
    Mutation(actions.CANCEL_REASSIGNMENT, "rest", ("post", "/api/reassignments/cancel/", {"preserve_throttles": True})),
    Mutation(actions.CANCEL_REASSIGNMENT, "cli", ("reassign_partitions", "--cancel", "--preserve-throttles",
                                                  "--reassignment-json-file", str(PLANS / "orders-1-plan.json"))),
    # the executor (issue 13): execution 51 is running or paused as the mutation needs (`world`)
    Mutation(actions.START_REASSIGNMENT, "rest", ("post", "/api/reassignments/executions/", {
        "partitions": [{"topic": "payments", "partition": 0, "replicas": [2]}]})),
    Mutation(actions.PAUSE_REASSIGNMENT, "rest", ("post", "/api/reassignments/executions/51/pause/", None)),
    Mutation(actions.RESUME_REASSIGNMENT, "rest", ("post", "/api/reassignments/executions/51/resume/", None)),
    Mutation(actions.CANCEL_REASSIGNMENT, "rest", ("post", "/api/reassignments/executions/51/cancel/", None)),
    Mutation(actions.START_REASSIGNMENT, "console", ("post", "/reassignments/execute/", {
        "plan": '{"partitions": [{"topic": "payments", "partition": 0, "replicas": [2]}]}', "description": "plan",
        "max_moves_per_broker": 10})),
    Mutation(actions.PAUSE_REASSIGNMENT, "console", ("post", "/reassignments/51/pause/", {})),
    Mutation(actions.RESUME_REASSIGNMENT, "console", ("post", "/reassignments/51/resume/", {})),
    Mutation(actions.CANCEL_REASSIGNMENT, "console", ("post", "/reassignments/51/cancel/", {})),
    Mutation(actions.DECOMMISSION_BROKER, "console", ("post", "/brokers/2/decommission/", {}), changes=False),
    # Reports (issue 16): run 4242 is a queued lag report run (`world`).
    Mutation(actions.RUN_REPORTS, "console", ("post", "/reports/lag/run/", {"period_hours": "2"})),
    Mutation(actions.RUN_REPORTS, "rest", ("post", "/api/reports/runs/", {"report": "lag",
                                                                           "parameters": {"period_hours": 2}})),
    Mutation(actions.CANCEL_REPORT_RUN, "console", ("post", "/reports/runs/4242/cancel/", {})),
    Mutation(actions.CANCEL_REPORT_RUN, "rest", ("post", "/api/reports/runs/4242/cancel/", None)),
    Mutation(actions.SCHEDULE_REPORTS, "console", ("post", "/reports/retention/schedule/",
                                                   {"crontab": "0 3 * * *", "enabled": "on"})),
    Mutation(actions.SCHEDULE_REPORTS, "rest", ("patch", "/api/reports/schedules/retention/",
                                                {"crontab": "0 3 * * *"})),
    Mutation(actions.MANAGE_ALERTS, "console", ("post", "/alerts/thresholds/new/", {"group": "etl", "topic": "*",
                                                                                "max_lag": 9})),
    Mutation(actions.MANAGE_ALERTS, "rest", ("patch", f"/api/alerts/thresholds/{THRESHOLD_ID}/", {"max_lag": 9})),
    Mutation(actions.MANAGE_ALERTS, "console", ("post", f"/alerts/endpoints/{ENDPOINT_ID}/edit/", {
        "name": "ops", "url": "https://h.example/hook", "preset": "standard", "method": "POST", "timeout_s": "15",
        "notify_threshold": "ERR", "reminder_interval_s": "600", "enabled": "on"})),
    # topics (issue 12)
    Mutation(actions.CREATE_TOPICS, "rest", ("post", "/api/topics/", {"name": "audits", "replication_factor": 1})),
    Mutation(actions.ALTER_CONFIGS, "rest", ("patch", "/api/topics/orders/", {"configs": {"retention.ms": "1000"}})),
    Mutation(actions.CREATE_PARTITIONS, "rest", ("post", "/api/topics/payments/partitions/", {"count": 2})),
    Mutation(actions.DELETE_TOPICS, "rest", ("delete", "/api/topics/payments/", None)),
    Mutation(actions.CREATE_TOPICS, "console", ("post", "/topics/create/", {"name": "audits",
                                                                            "replication_factor": 1})),
    Mutation(actions.ALTER_CONFIGS, "console", ("post", "/topics/orders/configs/", {"config": "retention.ms",
                                                                                    "value": "1000"})),
    Mutation(actions.CREATE_PARTITIONS, "console", ("post", "/topics/payments/partitions/", {"count": 2})),
    Mutation(actions.DELETE_TOPICS, "console", ("post", "/topics/payments/delete/", {"confirm_name": "payments"})),
    Mutation(actions.CREATE_TOPICS, "cli", ("topics", "--create", "--topic", "audits", "--replication-factor", "1")),
    Mutation(actions.ALTER_CONFIGS, "cli", ("configs", "--entity-type", "topics", "--entity-name", "orders", "--alter",
                                            "--add-config", "retention.ms=1000")),
    Mutation(actions.CREATE_PARTITIONS, "cli", ("topics", "--alter", "--topic", "payments", "--partitions", "2")),
    Mutation(actions.DELETE_TOPICS, "cli", ("topics", "--delete", "--topic", "payments")),
]
ROLES = [None, Role.VIEWER, Role.OPERATOR, Role.ADMIN]


@pytest.fixture
def world(cluster, monkeypatch, request):
    """A fake Kafka cluster (the groups tests' FakeGroupAdmin): group 'etl' (Empty) committed events-0 at 4. The
    metadata store (conftest `cluster`): orders-0 led by broker 2, not its preferred 1; orders-2 led by the fenced
    broker 3. Bob, an operator, holds a token. For the mutations of reassignment execution 51, that execution
    (payments-0 to broker 2, pending) is running, or paused for resume. Decommissioning gets a running broker 4
    to move broker 2's replicas to."""
    mutation = request.node.callspec.params["mutation"]
    if mutation.source != "cli" and re.match(r"(/api)?/reassignments/(executions/)?51/", mutation.request[1]):
        path = mutation.request[1]
        execution = ReassignmentExecution.objects.create(pk=51, description="spread", state=ExecutionState.PAUSED
                                                         if path.endswith("/resume/") else ExecutionState.RUNNING)
        ReassignmentTask.objects.create(execution=execution, topic="payments", partition=0, source_replicas=[1],
                                        target_replicas=[2])
    if mutation.action == actions.DECOMMISSION_BROKER:
        Broker.objects.create(broker_id=4, listeners="PLAINTEXT://127.0.0.1:9095", state=BrokerState.RUNNING)
    fake = FakeGroupAdmin()
    monkeypatch.setattr(kafka_client, "connect", lambda: fake)
    fake.add_topic("events", FakeLog(0, [0] * 12))
    fake.add_group("etl", committed={ETL_0: 4})
    Partition.objects.filter(topic__name="orders", partition=0).update(leader=2)
    Partition.objects.filter(topic__name="orders", partition=1).update(replicas=[2, 1, 3], removing_replicas=[3])
    bob = user_with_role("bob", Role.OPERATOR)
    ApiToken.objects.create(user=bob, expiry=None, name="bob's")
    ReportRun.objects.create(pk=4242, report="lag", run_id="lag-queued")
    LagThreshold.objects.create(id=THRESHOLD_ID, group="etl", max_lag=5)
    WebhookEndpoint.objects.create(id=ENDPOINT_ID, name="ops", url="https://h.example/hook")
    return fake


def state(fake) -> tuple:
    """Everything a mutation of the matrix could change."""
    partitions = tuple(Partition.objects.order_by("topic__name", "partition").values_list(
        "leader", "replicas", "adding_replicas", "removing_replicas"))
    bob_role = role_of(get_user_model().objects.get(username="bob"))
    topics = tuple(Topic.objects.order_by("name").annotate(n=Count("partitions")).values_list("name", "configs", "n"))
    return (tuple(sorted(fake.groups)), dict(fake.committed.get("etl", {})), partitions, topics,
            tuple(ApiToken.objects.order_by("name").values_list("user__username", "name")), bob_role,
            tuple(ReportRun.objects.order_by("pk").values_list("run_id", "status")),
            tuple(PeriodicTask.objects.order_by("name").values_list("name", "crontab_id", "enabled")),
            tuple(LagThreshold.objects.values_list("group", "max_lag")),
            tuple(ReassignmentExecution.objects.values_list("pk", "state")),
            tuple(ReassignmentTask.objects.values_list("topic", "partition", "state")),
            tuple(WebhookEndpoint.objects.values_list("name", "notify_threshold", "reminder_interval_s")))


def perform(mutation: Mutation, user) -> str:
    """Make the request as `user`; "done" or "refused" (anything else fails the test)."""
    if mutation.source == "cli":
        try:
            call_command(*mutation.request, "--as", user.username, stdout=StringIO(), stderr=StringIO())
        except CommandError as error:
            assert str(error).startswith("Refused: "), error
            return "refused"
        return "done"
    method, path, data = mutation.request
    if mutation.source == "console":
        client = Client()
        client.force_login(user)
        if data == "bob's token":
            data = {"token": ApiToken.objects.get(name="bob's").digest}
        status = getattr(client, method)(path, data).status_code
        assert status in (200, 302, 403), status
        return "refused" if status == 403 else "done"
    client = APIClient()
    if path != "/api/token/":  # that endpoint authenticates by the password in the body
        client.force_authenticate(user)
    status = getattr(client, method)(path, data, format="json").status_code
    assert status in (200, 201, 202, 204, 403), status
    return "refused" if status == 403 else "done"


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.group_name if r else "no-role")
@pytest.mark.parametrize("mutation", MUTATIONS, ids=str)
def test_role_matrix(world, mutation, role):
    user = user_with_role("alice", role)
    allowed = role is not None and role >= mutation.action.role
    before = state(world)

    assert perform(mutation, user) == ("done" if allowed else "refused")

    assert (state(world) != before) == (allowed and mutation.changes)
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.user, entry.source, entry.action, entry.result) == (
        "alice", user, mutation.source, mutation.action.name, "ok" if allowed else "refused")
    if not allowed:
        needed = mutation.action.role.group_name
        assert entry.detail == (f"{mutation.action.label} needs the {needed} role; "
                                + (f"your role is {role.group_name}." if role else "you have no role."))


def test_every_action_with_a_front_end_is_in_the_matrix():
    """Actions that some front end offers today; the rest are declared for features still to come."""
    assert {m.action for m in MUTATIONS} == {
        actions.RESET_OFFSETS, actions.DELETE_CONSUMER_GROUP, actions.ELECT_PREFERRED_LEADERS,
        actions.ELECT_UNCLEAN_LEADERS, actions.CREATE_TOKEN, actions.REVOKE_USER_TOKEN, actions.SET_ROLE,
        actions.RUN_REPORTS, actions.CANCEL_REPORT_RUN, actions.SCHEDULE_REPORTS, actions.MANAGE_ALERTS,
        actions.START_REASSIGNMENT, actions.CANCEL_REASSIGNMENT, actions.PAUSE_REASSIGNMENT,
        actions.RESUME_REASSIGNMENT, actions.DECOMMISSION_BROKER,
        actions.CREATE_TOPICS, actions.ALTER_CONFIGS, actions.CREATE_PARTITIONS, actions.DELETE_TOPICS}
