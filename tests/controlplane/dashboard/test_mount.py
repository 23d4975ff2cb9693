"""The dashboard is served by the project's WSGI app at /dashboard/, only to logged-in users with a role; its one
action (preferred leader election) goes through the same check and audit call as the console's."""

import json

import pytest
from django.test import Client as DjangoClient
from werkzeug.test import Client

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.topics.models import Partition
from controlplane.wsgi import application
from tests.conftest import user_with_role
from webui import ids

# The mount sends Django's request signals, which close the connection after each request (as in production);
# only a transactional test database survives that.
pytestmark = pytest.mark.django_db(transaction=True)


def dashboard_client(user) -> Client:
    django_client = DjangoClient()
    django_client.force_login(user)
    client = Client(application)
    client.set_cookie("sessionid", django_client.cookies["sessionid"].value)
    return client


@pytest.fixture
def logged_in(user):
    return dashboard_client(user)


def refresh_request(n_intervals: int = 1) -> dict:
    layout_outputs = [ids.BROKERS_RUNNING, ids.TOPICS, ids.PARTITIONS, ids.UNDER_REPLICATED, ids.OFFLINE]
    outputs = [{"id": i, "property": "children"} for i in layout_outputs] + [
        {"id": ids.BROKER_LOAD, "property": "figure"}, {"id": ids.HEALTH_HISTORY, "property": "figure"},
        {"id": ids.REFRESHED, "property": "children"}]
    return {
        "output": ".." + "...".join(f"{o['id']}.{o['property']}" for o in outputs) + "..",
        "outputs": outputs,
        "inputs": [{"id": ids.INTERVAL, "property": "n_intervals", "value": n_intervals}],
        "changedPropIds": [f"{ids.INTERVAL}.n_intervals"],
        "state": [],
    }


def test_anonymous_users_are_sent_to_the_login_page():
    response = Client(application).get("/dashboard/")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login/?next=/dashboard/"


def test_anonymous_dash_requests_are_refused():
    client = Client(application)
    assert client.get("/dashboard/_dash-layout").status_code == 401
    assert client.post("/dashboard/_dash-update-component", json=refresh_request()).status_code == 401


def test_a_forged_session_cookie_is_refused():
    client = Client(application)
    client.set_cookie("sessionid", "not-a-session")
    assert client.get("/dashboard/").status_code == 302


def test_logged_in_users_get_the_dashboard(logged_in):
    page = logged_in.get("/dashboard/")
    assert page.status_code == 200
    assert b"/dashboard/_dash-component-suites/" in page.data
    layout = logged_in.get("/dashboard/_dash-layout").get_json()
    assert "Cluster dashboard" in json.dumps(layout)


def test_refresh_callback_reads_the_metadata_store(logged_in, cluster):
    response = logged_in.post("/dashboard/_dash-update-component", json=refresh_request(3))
    assert response.status_code == 200, response.data
    body = response.get_json()["response"]
    assert body[ids.BROKERS_RUNNING]["children"] == f"{cluster['running']} / {cluster['brokers']}"
    assert body[ids.PARTITIONS]["children"] == str(cluster["partitions"])
    assert body[ids.OFFLINE]["children"] == str(cluster["offline"])
    bars = body[ids.BROKER_LOAD]["figure"]["data"]
    assert bars[0]["name"] == "leader partitions"
    assert list(bars[0]["y"]) == [2, 1, 1]  # leaders of orders-0/payments-0, orders-1, orders-2
    assert list(bars[1]["y"]) == [4, 3, 3]
    assert body[ids.REFRESHED]["children"].startswith("refresh #3")


def test_users_without_a_role_are_refused(db):
    response = dashboard_client(user_with_role("nobody", None)).get("/dashboard/")
    assert response.status_code == 403
    assert response.text == "Reading the cluster's metadata, groups, lag and audit log needs the viewer role; " \
                            "you have no role."


def test_dashboard_answers_carry_the_consoles_security_headers(logged_in):
    for response in (logged_in.get("/dashboard/"), Client(application).get("/dashboard/")):
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "same-origin"


def elect_button(client) -> dict:
    layout = client.get("/dashboard/_dash-layout").get_json()
    return next(c["props"] for c in _components(layout) if c.get("props", {}).get("id") == ids.ELECT_LEADERS)


def _components(node):
    if isinstance(node, dict):
        yield node
        yield from _components(node.get("props", {}).get("children"))
    elif isinstance(node, list):
        for child in node:
            yield from _components(child)


def click_elect(client) -> str:
    response = client.post("/dashboard/_dash-update-component", json={
        "output": f"{ids.ELECT_LEADERS_OUTCOME}.children",
        "outputs": {"id": ids.ELECT_LEADERS_OUTCOME, "property": "children"},
        "inputs": [{"id": ids.ELECT_LEADERS, "property": "n_clicks", "value": 1}],
        "changedPropIds": [f"{ids.ELECT_LEADERS}.n_clicks"], "state": []})
    assert response.status_code == 200, response.data
    return response.get_json()["response"][ids.ELECT_LEADERS_OUTCOME]["children"]


def test_a_viewer_sees_the_election_button_disabled_and_is_refused(cluster):
    Partition.objects.filter(topic__name="orders", partition=0).update(leader=2)
    viewer = dashboard_client(user_with_role("vera", Role.VIEWER))
    button = elect_button(viewer)
    assert button["disabled"] is True
    assert button["title"] == "Preferred leader election needs the operator role; your role is viewer."
    assert click_elect(viewer) == button["title"]  # a forged click is refused by the same check
    assert Partition.objects.get(topic__name="orders", partition=0).leader == 2
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.source, entry.action, entry.result) == ("vera", "dash", "elect_preferred_leaders",
                                                                       "refused")


def test_an_operator_elects_preferred_leaders_from_the_dashboard(logged_in, cluster):
    Partition.objects.filter(topic__name="orders", partition=0).update(leader=2)
    assert elect_button(logged_in)["disabled"] is False
    assert click_elect(logged_in).startswith("Elected the preferred leader of 1 partition(s)")
    assert Partition.objects.get(topic__name="orders", partition=0).leader == 1
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.source, entry.action, entry.target, entry.result) == (
        "operator", "dash", "elect_preferred_leaders", "partitions:all", "ok")
    assert entry.before["leaders"]["orders-0"] == 2 and entry.after["leaders"]["orders-0"] == 1
