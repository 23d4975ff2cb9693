"""The dashboard is served by the project's WSGI app at /dashboard/, only to logged-in users with a role, inside
the console's navigation; its callbacks read the metadata store and the metrics rollups, and its one action
(preferred leader election) goes through the same check and audit call as the console's."""

import gzip
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client as DjangoClient
from werkzeug.test import Client

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.metrics.models import BrokerMetricPoint
from controlplane.topics.models import Partition
from controlplane.wsgi import application
from tests.conftest import user_with_role
from tests.support.dash_client import DashCallbacks
from webui.scripts import IMMUTABLE, PLOTLY_BUNDLE, service_worker_script

# The mount sends Django's request signals, which close the connection after each request (as in production);
# only a transactional test database survives that.
pytestmark = pytest.mark.django_db(transaction=True)
PAGES = ("", "throughput", "lag", "partitions", "disk", "reassignments")


def dashboard_client(user) -> Client:
    django_client = DjangoClient()
    django_client.force_login(user)
    client = Client(application)
    client.set_cookie("sessionid", django_client.cookies["sessionid"].value)
    return client


def dash_callbacks(client: Client) -> DashCallbacks:
    def post(path, body):
        response = client.post(path, json=body)
        return response.status_code, response.data
    return DashCallbacks(lambda path: client.get(path).get_json(), post)


@pytest.fixture
def logged_in(user):
    return dashboard_client(user)


@pytest.fixture
def callbacks(logged_in):
    return dash_callbacks(logged_in)


def test_anonymous_users_are_sent_to_the_login_page():
    response = Client(application).get("/dashboard/")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login/?next=/dashboard/"


def test_anonymous_dash_requests_are_refused():
    client = Client(application)
    assert client.get("/dashboard/_dash-layout").status_code == 401
    assert client.post("/dashboard/_dash-update-component", json={}).status_code == 401


def test_the_dashboards_code_and_style_need_no_login_and_nothing_else_does():
    """They are the same for everyone (like Django's /static/), so the login page can prefetch them."""
    client = Client(application)
    scripts = re.findall(r'<script src="([^"]+)"', dashboard_client_html())
    for url in scripts:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["Cache-Control"] == IMMUTABLE and response.headers["X-Frame-Options"] == "DENY"
    assert client.head(scripts[0]).status_code == 200
    assert client.post(scripts[0]).status_code == 401
    for climbing in ("/dashboard/_dash-component-suites/../_dash-layout", "/dashboard/assets/../_dash-layout"):
        assert client.get(climbing).status_code == 401
    assert client.get("/dashboard/_dash-dependencies").status_code == 401


def dashboard_client_html() -> str:
    """The dashboard's page as a logged-in user gets it."""
    return dashboard_client(user_with_role("reader", Role.VIEWER)).get("/dashboard/").get_data(as_text=True)


@pytest.mark.parametrize("logged_in_user", [False, True])
def test_the_login_page_and_the_consoles_pages_prefetch_every_script_the_dashboard_loads(logged_in_user):
    page = dashboard_client(user_with_role("pat", Role.VIEWER)).get("/") if logged_in_user \
        else Client(application).get("/login/")
    assert page.status_code == 200
    prefetched = re.findall(r'<link rel="prefetch" href="([^"]+)">', page.get_data(as_text=True))
    html = dashboard_client_html()
    loaded = re.findall(r'<script src="([^"]+)"|<link rel="stylesheet" href="([^"]+)"', html)
    assert prefetched == [url for script, sheet in loaded if (url := script or sheet).startswith("/dashboard/")]


def test_the_service_worker_caches_the_scripts_the_dashboard_loads_under_a_name_that_changes_with_them():
    client = Client(application)
    page = client.get("/login/").get_data(as_text=True)
    assert 'navigator.serviceWorker.register("/dashboard/service-worker.js",' in page
    assert '{scope: "/dashboard/"}' in page
    worker = client.get("/dashboard/service-worker.js")  # registered from the login page: no session
    assert worker.status_code == 200 and worker.mimetype == "text/javascript"
    assert worker.headers["Cache-Control"] == "no-cache"  # a new release's worker is seen at the next visit
    script = worker.get_data(as_text=True)
    bundles = json.loads(re.search(r"const BUNDLES = (.*);", script).group(1))
    assert bundles == re.findall(r'<link rel="prefetch" href="([^"]+)">', page)
    assert re.search(r'const PREFIXES = \["/dashboard/_dash-component-suites/", "/dashboard/assets/"\];', script)

    def cache(bundles):
        return re.search(r"const CACHE = (.*);", service_worker_script(tuple(bundles), "/dashboard/")).group(1)
    assert cache(bundles) == cache(list(bundles)) != cache(bundles[:-1]) != cache([*bundles[:-1], "/x.js?m=2"])


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


def _by_id(layout) -> dict:
    return {c["props"]["id"]: c for c in _components(layout) if isinstance(c.get("props", {}).get("id"), str)}


def test_the_layout_holds_the_page_the_browser_is_on(logged_in):
    """The page's script fetches the layout, its Referer naming the page: the layout holds that page's components
    and a Location that already matches the browser's, so no routing callback has to run before it can draw."""
    layout = logged_in.get("/dashboard/_dash-layout",
                           headers={"Referer": "http://testserver/dashboard/throughput?x=1"}).get_json()
    components = _by_id(layout)
    assert {"throughput-brokers", "throughput-topics", "throughput-range"} <= set(components)
    location = components["_pages_location"]["props"]
    assert (location["pathname"], location["search"], location["refresh"]) == ("/dashboard/throughput", "?x=1",
                                                                             "callback-nav")
    assert components["_pages_store"]["props"]["data"] == {"title": "Throughput · Strom dashboard"}


def test_the_page_preloads_its_layout(logged_in):
    html = logged_in.get("/dashboard/throughput").get_data(as_text=True)
    for path in ("_dash-layout", "_dash-dependencies"):
        assert f'<link rel="preload" href="/dashboard/{path}" as="fetch" crossorigin="anonymous">' in html


@pytest.mark.parametrize("referer", [None, "http://testserver/dashboard/no-such-page", "http://testserver/topics/"])
def test_without_a_page_in_the_referer_the_routing_callback_fills_the_page(logged_in, referer):
    layout = logged_in.get("/dashboard/_dash-layout", headers={"Referer": referer} if referer else {}).get_json()
    components = _by_id(layout)
    assert not components["_pages_content"]["props"].get("children")
    assert "pathname" not in components["_pages_location"]["props"]


def overview_layout(client: Client) -> dict:
    """The Overview page's layout as the browser gets it when it opens the page (built per request)."""
    status, raw = dash_callbacks(client).call("_pages_content.children", {"_pages_location.pathname": "/dashboard/"})
    assert status == 200, raw
    return json.loads(raw)["response"]["_pages_content"]["children"]


def elect_button(client: Client) -> dict:
    return next(c["props"] for c in _components(overview_layout(client))
                if c.get("props", {}).get("id") == "overview-elect-leaders")


def _components(node):
    if isinstance(node, dict):
        yield node
        yield from _components(node.get("props", {}).get("children"))
    elif isinstance(node, list):
        for child in node:
            yield from _components(child)


def click_elect(client: Client) -> str:
    status, raw = dash_callbacks(client).call("overview-elect-leaders-outcome.children",
                                              {"overview-elect-leaders.n_clicks": 1})
    assert status == 200, raw
    return json.loads(raw)["response"]["overview-elect-leaders-outcome"]["children"]


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


def test_the_overview_is_drawn_into_its_layout_in_the_viewers_zone(logged_in, cluster):
    """The landing page paints without a callback round trip: tiles and figures come with its layout, in the zone
    of the viewer's cookie (which the console's pages write)."""
    BrokerMetricPoint.objects.create(resolution=10, start=datetime.now(UTC) - timedelta(minutes=1), broker_id=1,
                                     bytes_in=10_000, bytes_out=5_000)
    logged_in.set_cookie("strom_tz", "Europe/Berlin")
    components = list(_components(overview_layout(logged_in)))
    figures = {c["props"]["id"]: c["props"]["figure"] for c in components if c.get("type") == "Graph"}
    throughput = figures["overview-throughput"]
    assert [s["name"] for s in throughput["data"]] == ["bytes in", "bytes out"]
    assert throughput["layout"]["xaxis"]["title"]["text"] == "time (Europe/Berlin)"
    assert figures["overview-load"]["data"][0]["name"] == "leader partitions"
    brokers_tile = next(c for c in components if c.get("props", {}).get("id") == "overview-tile-brokers")
    assert f"{cluster['running']} / {cluster['brokers']}" in json.dumps(brokers_tile)
    assert brokers_tile["props"]["className"] == "tile bad"  # a broker is fenced


def test_the_dashboard_loads_only_the_scripts_it_uses_compressed_and_cached_for_good(logged_in):
    scripts = re.findall(r'<script src="([^"]+)"', logged_in.get("/dashboard/").get_data(as_text=True))
    assert any(PLOTLY_BUNDLE.name in src for src in scripts)  # plotly.js's cartesian bundle, not plotly.min.js
    assert any("dcc/async-graph" in src for src in scripts)
    for unused in ("plotly/package_data", "async-mathjax", "async-markdown", "async-upload", "dash_table/async-"):
        assert not any(unused in src for src in scripts), unused
    assert f"v{PLOTLY_BUNDLE.name.split('-')[-1].removesuffix('.min.js')}" in PLOTLY_BUNDLE.read_text()[:200]

    for url in (next(src for src in scripts if "dash_core_components." in src),
                next(src for src in scripts if PLOTLY_BUNDLE.name in src)):
        plain = logged_in.get(url)
        packed = logged_in.get(url, headers={"Accept-Encoding": "gzip"})
        assert packed.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(packed.data) == plain.data
        assert packed.headers["Cache-Control"] == IMMUTABLE
        assert logged_in.get(url, headers={"Accept-Encoding": "gzip"}).data == packed.data  # compressed once
    on_demand = logged_in.get("/dashboard/_dash-component-suites/dash/dcc/async-markdown.js")  # no fingerprint
    assert on_demand.status_code == 200 and on_demand.headers.get("Cache-Control") != IMMUTABLE
    status, raw = dash_callbacks(logged_in).call("reassignments-list.children", {"shell-interval.n_intervals": 1})
    assert status == 200 and "cannot reassign" in raw.decode()  # callbacks are never answered from that cache
