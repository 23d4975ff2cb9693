"""The REST API under attack: schemathesis generates requests (valid and invalid) for every operation of
/api/schema/ and sends them over HTTP to the live control plane, as an admin, an operator, a viewer and anonymously.
No request may get a 5xx; every mutating operation refuses a viewer (403) and anonymous requests (401/403).

POST /api/token/ is the exception to the refusals: it is how a script logs in (user name and password in the body,
no credentials needed), and it changes no cluster state. Group operations run against a real standalone broker, the
lag endpoints against a real lag-monitor HTTP server (monitoring.http_api over a monitor with known groups)."""

import contextlib
from urllib.parse import unquote, urlsplit

import hypothesis
import pytest
import requests
import schemathesis
from django.urls import Resolver404, resolve
from hypothesis import HealthCheck, Phase
from schemathesis import GenerationMode

from controlplane.access.actions import Role
from controlplane.access.models import ApiToken
from monitoring.http_api import MonitorHttpServer
from tests.conftest import user_with_role
from tests.controlplane.groups.real_cluster import BROKER_OVERRIDES
from tests.monitoring.test_http_api import monitor  # noqa: F401 (the fixture: groups billing OK, slow WARN)
from tests.support.broker import standalone_broker

pytestmark = pytest.mark.slow

EXAMPLES = {Role.ADMIN: 10, Role.OPERATOR: 10, Role.VIEWER: 5, None: 4}
"""Generated requests per operation and generation mode (positive and negative), per role; CI-sized."""
LOGIN = ("POST", "/api/token/")
MONITOR_SECRET = "fuzz-cluster-secret"
READS = ("GET", "HEAD", "OPTIONS")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker"), BROKER_OVERRIDES) as running:
        yield running


@pytest.fixture(scope="module")
def lag_monitor(monitor):  # noqa: F811
    running = MonitorHttpServer(monitor, secret=MONITOR_SECRET)
    running.start()
    yield running
    running.stop()


def violation(role: Role | None, operation, response: requests.Response) -> str | None:
    """What is wrong with this answer to this role, if anything."""
    status, method = response.status_code, operation.method.upper()
    if status >= 500:
        return f"server error: {response.text[:300]}"
    if (method, operation.path) == LOGIN or not routed(response):
        return None
    if role is None and method in READS and status < 300:
        return "an anonymous read succeeded"
    if role is None and method not in READS and status not in (401, 403):
        return "an anonymous change was not refused"
    if role == Role.VIEWER and method not in READS and status != 403:
        return "a viewer's change was not refused"
    return None


@pytest.mark.timeout(900)  # grows with the API: every operation gets its examples (the suite's default is 300 s)
@pytest.mark.parametrize("role", list(EXAMPLES), ids=lambda r: r.group_name if r else "anonymous")
def test_no_server_errors_and_refusals_for_every_generated_request(live_app, cluster, broker, lag_monitor, settings,
                                                                   role):
    settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
    settings.STROM_CLUSTER_SECRET = MONITOR_SECRET
    settings.STROM_LAG_MONITOR_URL = f"http://127.0.0.1:{lag_monitor.port}"
    admin_token = ApiToken.objects.create(user=user_with_role("schema-reader", Role.ADMIN), expiry=None,
                                          name="schema")[1]
    schema = schemathesis.openapi.from_url(f"{live_app}/api/schema/?format=json",
                                           headers={"Authorization": f"Token {admin_token}"})
    headers = {}
    if role is not None:
        _, token = ApiToken.objects.create(user=user_with_role("fuzzer", role), expiry=None, name="fuzz")
        headers["Authorization"] = f"Token {token}"
    session = requests.Session()
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/api/groups/{group_id}/reset-offsets/", "/api/elect-leaders/",
                                              "/api/audit/", "/api/token/"}

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for case in generated(operation, mode, EXAMPLES[role]):
                response = case.call(base_url=live_app, session=session, headers=headers, timeout=30)
                if wrong := violation(role, operation, response):
                    failures.append(f"{case.method} {case.formatted_path} ({mode.value}) -> {response.status_code}: "
                                    f"{wrong}")
    assert not failures, "\n".join(failures[:30])


def routed(response: requests.Response) -> bool:
    """Whether the URL reaches a view (a path the URL map does not know is a 404 before any permission check)."""
    try:
        resolve(unquote(urlsplit(response.request.url).path))
    except Resolver404:
        return False
    return True


def generated(operation, mode: GenerationMode, examples: int) -> list:
    """Up to `examples` cases of `operation` (derandomized: the same ones every run), none if nothing can be
    generated in this mode (e.g. no parameter to make invalid)."""
    cases = []

    @hypothesis.settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    def collect(case):
        cases.append(case)

    with contextlib.suppress(hypothesis.errors.Unsatisfiable):
        collect()
    return cases
