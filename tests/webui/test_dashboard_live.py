"""Every dashboard page in a real headless Chromium, on a live 3-broker cluster under produce/consume load:
each renders real figures (no "Loading..." once it settles) and leaves a screenshot in var/screenshots/.

The lag page's history comes from `__strom_lag_samples`; until the lag monitor (issue 14) runs in `make run`,
this test publishes evaluations in that topic's contract format itself, from the readers' real offsets."""

import contextlib
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from playwright.sync_api import expect

from tests.conftest import SCREENSHOTS
from tests.support.cluster import broker_cluster
from tests.support.controlplane import REPO_ROOT, control_plane
from tests.support.dashboard_page import GRAPHS, wait_for_figures
from tests.support.polling import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TOPICS = ("orders", "payments", "clicks")
GROUP = "dashboard-readers"
PASSWORD = "dashboard password"
NO_REFRESH_MS = 3_600_000
SWITCH_DEADLINE_S = 30  # a loaded machine (load 30 here); any deadline under NO_REFRESH_MS rules out a refresh
PAGES = {"overview": "", "throughput": "throughput", "lag": "lag", "partitions": "partitions", "disk": "disk",
         "reassignments": "reassignments"}


class Load:
    """A producer, a slow consumer group and a lag evaluation every second, on threads, until exit."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume_and_evaluate, daemon=True)]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(30)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 10})
        i = 0
        while not self.stop.is_set():
            for n, topic in enumerate(TOPICS):
                producer.produce(topic, value=b"x" * (200 * (n + 1)), key=str(i).encode())
            i += 1
            producer.poll(0)
            if i % 50 == 0:
                self.stop.wait(0.05)  # a steady rate, not a flood
        producer.flush(10)

    def _consume_and_evaluate(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                             "enable.auto.commit": True, "auto.commit.interval.ms": 500})
        consumer.subscribe(["orders", "payments"])
        samples = Producer({"bootstrap.servers": self.bootstrap})
        next_evaluation = 0.0
        try:
            while not self.stop.is_set():
                consumer.consume(200, 0.2)
                self.stop.wait(0.05)  # a slow reader: it lags
                if time.monotonic() >= next_evaluation:
                    next_evaluation = time.monotonic() + 1.0
                    self._evaluate(consumer, samples)
        finally:
            consumer.close()
            samples.flush(10)

    @staticmethod
    def _evaluate(consumer: Consumer, samples: Producer) -> None:
        ts = int(time.time() * 1000)
        partitions = [TopicPartition(t, p) for t in ("orders", "payments") for p in range(3)]
        with contextlib.suppress(Exception):  # a rebalance or a slow answer: skip this round
            for tp in consumer.committed(partitions, timeout=5):
                _, end = consumer.get_watermark_offsets(tp, timeout=5)
                lag = max(end - tp.offset, 0) if tp.offset >= 0 else None
                status = "OK" if not lag or lag < 200 else "WARN"
                samples.produce("__strom_lag_samples", key=GROUP.encode(), timestamp=ts, value=json.dumps({
                    "ts": ts, "cluster": "test", "group": GROUP, "topic": tp.topic, "partition": tp.partition,
                    "committed_offset": tp.offset if tp.offset >= 0 else None, "end_offset": end, "lag": lag,
                    "lag_seconds": None if lag is None else lag / 400, "status": status, "group_status": status,
                    "threshold_breached": False}).encode())
            samples.poll(0)


def history_recorded(plane) -> bool:
    with contextlib.closing(sqlite3.connect(plane.database, timeout=10)) as db:
        brokers = db.execute("SELECT COUNT(*) FROM metrics_brokermetricpoint WHERE resolution = 10").fetchone()[0]
        lag = db.execute("SELECT COUNT(*) FROM metrics_lagmetricpoint").fetchone()[0]
    return brokers >= 9 and lag > 0


@pytest.fixture(scope="module")
def live_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dashboard")
    # No refresh while the tests run: every figure must come from its page's own first callbacks (or layout).
    with control_plane(directory, env={"STROM_DASHBOARD_REFRESH_MS": str(NO_REFRESH_MS)}) as plane, broker_cluster(
            plane, directory, 3, overrides={"strom.metrics.sample.interval.ms": "1000"}) as cluster:
        subprocess.run([sys.executable, "manage.py", "ensure_admin", "--username", "operator"], cwd=REPO_ROOT,
                       env={**plane.env, "STROM_ADMIN_PASSWORD": PASSWORD}, check=True, capture_output=True)
        for topic in TOPICS:
            cluster.create_topic(topic, partitions=3, replication_factor=3)
        plane.start_metrics_consumer()
        with Load(cluster.bootstrap):
            wait_until(lambda: history_recorded(plane), 90, interval_s=0.5, message="metric and lag history")
            yield plane


def log_in(page, base_url: str) -> None:
    page.goto(f"{base_url}/dashboard/")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/dashboard/$"))


def charts_with_data(page) -> int:
    """Charts drawn with data once no Dash request is pending (0 while any is still loading)."""
    if page.locator("[data-dash-is-loading=true]").count():
        return 0
    return page.locator(".js-plotly-plot .scatterlayer .trace, .js-plotly-plot .barlayer .trace, "
                        ".js-plotly-plot .heatmaplayer image, .js-plotly-plot .hm").count()


@pytest.fixture
def page(chromium):
    """A viewer in Berlin: charts show its local time."""
    context = chromium.new_context(viewport={"width": 1366, "height": 850}, timezone_id="Europe/Berlin")
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_renders_real_figures(page, live_cluster, name):
    log_in(page, live_cluster.url)
    page.goto(f"{live_cluster.url}/dashboard/{PAGES[name]}")
    expect(page.locator("h1")).to_be_visible(timeout=20_000)  # a loaded machine parses the scripts slowly
    if name == "reassignments":  # nothing can move until issue 13: the page says why, in words
        expect(page.locator("#reassignments-list")).to_contain_text("cannot reassign partitions yet")
    else:
        wait_until(lambda: charts_with_data(page), 30, interval_s=0.2, message=f"{name}: charts with data")
    expect(page.get_by_text("Loading...")).to_have_count(0)
    expect(page.locator(".topbar .nav")).to_contain_text("Consumer groups")
    if name == "overview":
        expect(page.locator("#overview-tile-brokers .figure")).to_have_text("3 / 3")
        expect(page.locator("#overview-throughput .g-xtitle")).to_have_text("time (Europe/Berlin)")
    if name == "disk":
        expect(page.locator("#disk-table table tbody tr")).to_have_count(3)
    if name == "lag":
        expect(page.locator("#lag-chart .gtitle")).to_contain_text(GROUP)
    page.screenshot(path=SCREENSHOTS / f"dashboard-{name}.png", full_page=True)


def test_switching_pages_draws_every_figure_without_waiting_for_a_refresh(page, live_cluster):
    """Round after round through the sub-navigation, each page's figures are drawn with data from its own first
    callbacks (the refresh interval is an hour here), within the deadline. The page opened first comes with the
    layout, which is fetched once: no routing callback runs before it draws."""
    routed, layouts = [], []
    page.on("request", lambda r: "_pages_content" in (r.post_data or "") and routed.append(r.url))
    page.on("request", lambda r: r.url.endswith("/_dash-layout") and layouts.append(r.url))
    log_in(page, live_cluster.url)
    wait_for_figures(page, "Overview", SWITCH_DEADLINE_S)
    assert routed == []
    assert len(layouts) == 1  # preloaded with the page, and Dash's renderer used that answer
    for _ in range(3):
        for name in (*list(GRAPHS)[1:], "Overview"):
            page.click(f".subnav a:text-is('{name}')")
            wait_for_figures(page, name, SWITCH_DEADLINE_S)


NOT_YET_FETCHED = """(urls) => { const done = new Set(performance.getEntriesByType('resource')
    .filter(e => e.responseEnd > 0).map(e => e.name)); return urls.filter(u => !done.has(u)); }"""
SERVICE_WORKER_ACTIVE = """() => navigator.serviceWorker.getRegistration('/dashboard/')
    .then(r => !!(r && r.active && r.active.state === 'activated'))"""


def test_the_dashboard_opened_after_login_runs_the_scripts_the_console_fetched_ahead(page, live_cluster):
    """The login page and the console's pages prefetch the dashboard's scripts and stylesheet and register its
    service worker, which keeps them in CacheStorage: a user who logs in (both done while they type), lands on
    the console's Overview and opens the dashboard from its navigation gets its figures drawn with every one of
    those files answered by the service worker from CacheStorage; the server sent each once."""
    access_log = live_cluster.var_dir / "log" / "web.log"  # gunicorn's access log, among the rest
    served_before = access_log.stat().st_size
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    sources: dict[str, str] = {}
    cdp.on("Network.responseReceived", lambda e: sources.__setitem__(
        e["response"]["url"], e["response"].get("serviceWorkerResponseSource") or "network"))

    page.goto(f"{live_cluster.url}/login/")  # not logged in yet: the files are code and style, no cluster data
    bundles = page.eval_on_selector_all("link[rel=prefetch]", "links => links.map(l => l.href)")
    assert any("plotly-cartesian" in url for url in bundles) and any("dash_renderer" in url for url in bundles)
    wait_until(lambda: page.evaluate(NOT_YET_FETCHED, bundles) == [], 60, message="the login page's prefetches")
    wait_until(lambda: page.evaluate(SERVICE_WORKER_ACTIVE), 60, message="the dashboard's service worker")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{live_cluster.url}/")
    assert page.eval_on_selector_all("link[rel=prefetch]", "links => links.map(l => l.href)") == bundles

    sources.clear()
    page.click(".topbar .nav a:text-is('Dashboard')")
    wait_for_figures(page, "Overview", SWITCH_DEADLINE_S)
    loaded = page.eval_on_selector_all("script[src], link[rel=stylesheet]", "els => els.map(e => e.src || e.href)")
    assert set(bundles) <= set(loaded)
    assert {url for url in loaded if "/dashboard/" in url} <= set(bundles)  # every script the dashboard loads
    assert {url: sources.get(url) for url in bundles} == dict.fromkeys(bundles, "cache-storage")
    paths = [url.removeprefix(live_cluster.url) for url in bundles]
    with access_log.open(errors="replace") as log:
        log.seek(served_before)
        requests = Counter(re.findall(r'"GET (\S+) HTTP', log.read()))
    assert {path: requests[path] for path in paths} == dict.fromkeys(paths, 1)
