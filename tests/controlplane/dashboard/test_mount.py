"""The dashboard is served by the project's WSGI app at /dashboard/, only to logged-in users."""

import json

import pytest
from django.test import Client as DjangoClient
from werkzeug.test import Client

from controlplane.wsgi import application
from webui import ids

# The mount sends Django's request signals, which close the connection after each request (as in production);
# only a transactional test database survives that.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def logged_in(user):
    django_client = DjangoClient()
    django_client.force_login(user)
    client = Client(application)
    client.set_cookie("sessionid", django_client.cookies["sessionid"].value)
    return client


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
