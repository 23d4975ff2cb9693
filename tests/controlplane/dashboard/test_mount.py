"""The dashboard is served by the project's WSGI app at /dashboard/, only to logged-in users, inside the
console's navigation, and its callbacks read the metadata store and the metrics rollups."""

import json

import pytest
from django.test import Client as DjangoClient
from werkzeug.test import Client

from controlplane.wsgi import application
from tests.conftest import PASSWORD
from tests.support.dash_client import DashCallbacks

# The mount sends Django's request signals, which close the connection after each request (as in production);
# only a transactional test database survives that.
pytestmark = pytest.mark.django_db(transaction=True)
PAGES = ("", "throughput", "lag", "partitions", "disk", "reassignments")


@pytest.fixture
def logged_in(user):
    django_client = DjangoClient()
    assert django_client.login(username="operator", password=PASSWORD)
    client = Client(application)
    client.set_cookie("sessionid", django_client.cookies["sessionid"].value)
    return client


@pytest.fixture
def callbacks(logged_in):
    def post(path, body):
        response = logged_in.post(path, json=body)
        return response.status_code, response.data
    return DashCallbacks(lambda path: logged_in.get(path).get_json(), post)


def test_anonymous_users_are_sent_to_the_login_page():
    response = Client(application).get("/dashboard/")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login/?next=/dashboard/"


def test_anonymous_dash_requests_are_refused():
    client = Client(application)
    assert client.get("/dashboard/_dash-layout").status_code == 401
    assert client.post("/dashboard/_dash-update-component", json={}).status_code == 401


def test_a_forged_session_cookie_is_refused():
    client = Client(application)
    client.set_cookie("sessionid", "not-a-session")
    assert client.get("/dashboard/").status_code == 302


@pytest.mark.parametrize("page", PAGES)
def test_every_page_is_served_with_the_console_navigation(logged_in, page):
    assert logged_in.get(f"/dashboard/{page}").status_code == 200
    layout = json.dumps(logged_in.get("/dashboard/_dash-layout").get_json())
    for section in ("Overview", "Brokers", "Topics", "Consumer groups", "Dashboard", "Log out", "operator"):
        assert section in layout
    assert "console/console.css" in logged_in.get(f"/dashboard/{page}").get_data(as_text=True)


def test_overview_reads_the_metadata_store(callbacks, cluster):
    status, raw = callbacks.call("overview-throughput.figure", {"shell-interval.n_intervals": 3,
                                                                "shell-timezone.data": "Europe/Berlin"})
    assert status == 200, raw
    body = json.loads(raw)["response"]
    tiles = json.dumps(body["overview-tile-brokers"])
    assert f"{cluster['running']} / {cluster['brokers']}" in tiles
    assert json.dumps(body["overview-tile-offline"]).count(str(cluster["offline"])) >= 1
    bars = body["overview-load"]["figure"]["data"]
    assert bars[0]["name"] == "leader partitions"
    assert list(bars[0]["y"]) == [2, 1, 1]  # leaders of orders-0/payments-0, orders-1, orders-2
    assert list(bars[1]["y"]) == [4, 3, 3]
    throughput = body["overview-throughput"]["figure"]
    assert throughput["data"] == []  # nothing recorded: the empty state says why
    assert "consume_metrics" in throughput["layout"]["annotations"][0]["text"]


def test_reassignments_page_says_why_it_is_empty(callbacks):
    status, raw = callbacks.call("reassignments-list.children", {"shell-interval.n_intervals": 1})
    assert status == 200
    assert "cannot reassign partitions yet" in raw.decode()
