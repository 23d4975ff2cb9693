"""Run now while Celery's broker is down: the run is recorded failed with the reason, REST answers 503 and the
console says why — against a real Redis of the test's own, really stopped."""

import pytest
from django.test import Client

from controlplane.audit.models import AuditEntry
from controlplane.reports.models import ReportRun, RunStatus
from tests.support.redis_server import celery_broker, redis_server

REPORTS_QUEUE = "reports-under-test"


@pytest.fixture
def redis(tmp_path, settings):
    settings.STROM_REPORTS_QUEUE = REPORTS_QUEUE
    with redis_server(tmp_path) as server, celery_broker(server.url):
        settings.CELERY_BROKER_URL = server.url
        yield server


@pytest.mark.django_db(transaction=True)
def test_run_now_while_redis_is_down_fails_the_run_and_answers_503(redis, api_client):
    api = api_client
    queued = api.post("/api/reports/runs/", {"report": "lag"}, format="json")
    assert queued.status_code == 202, queued.content
    assert redis.client().llen(REPORTS_QUEUE) == 1, "the task went to the real Redis"

    redis.stop()
    response = api.post("/api/reports/runs/", {"report": "lag", "parameters": {"period_hours": 24}}, format="json")

    assert response.status_code == 503, response.content
    body = response.json()
    run = ReportRun.objects.get(run_id=body["run"]["run_id"])
    assert (run.status, body["run"]["status"], body["error"]) == (RunStatus.FAILED, "failed", "SERVICE_UNAVAILABLE")
    assert run.error.startswith(f"not queued: Celery's broker at {redis.url} is unreachable (")
    assert run.error.endswith("); start Redis and run the report again")
    assert body["message"] == f"run {run.run_id} {run.error}"
    assert run.finished_at is not None and run.parameters == {"period_hours": 24.0}
    entry = AuditEntry.objects.filter(action="run_reports").latest("pk")
    assert entry.result == "failed" and "not queued" in entry.detail
    assert ReportRun.objects.get(pk=queued.json()["id"]).status == RunStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_the_console_says_why_a_run_was_not_queued(redis, user):
    redis.stop()
    browser = Client()
    browser.force_login(user)

    response = browser.post("/reports/lag/run/", {"period_hours": "1"}, follow=True)

    run = ReportRun.objects.get()
    assert run.status == RunStatus.FAILED and response.status_code == 200
    assert response.redirect_chain[-1][0] == f"/reports/runs/{run.pk}/"
    page = response.content.decode()
    assert f"Run {run.run_id} not queued: Celery&#x27;s broker at {redis.url} is unreachable" in page
