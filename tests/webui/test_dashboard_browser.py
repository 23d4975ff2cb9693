"""The Dash dashboard in a real headless Chromium, behind the console's login."""

import re

import pytest
from playwright.sync_api import expect

from controlplane.health.snapshot import take_snapshot
from tests.conftest import SCREENSHOTS
from tests.controlplane.console.test_browser import log_in

pytestmark = pytest.mark.browser


def test_dashboard_renders_cluster_data_and_refreshes(page, live_app, user, cluster):
    take_snapshot()
    take_snapshot()
    log_in(page, live_app, next_path="/dashboard/")
    expect(page).to_have_url(re.compile(r"/dashboard/$"))
    expect(page.get_by_role("heading", name="Cluster dashboard")).to_be_visible()
    expect(page.locator("#cluster-brokers-running")).to_have_text(f"{cluster['running']} / {cluster['brokers']}")
    expect(page.locator("#cluster-partitions")).to_have_text(str(cluster["partitions"]))
    expect(page.locator("#cluster-broker-load .bars path")).to_have_count(6)  # 3 brokers × 2 series
    expect(page.locator("#cluster-health-history .scatterlayer .trace")).to_have_count(3)
    expect(page.locator("#cluster-refreshed")).to_contain_text("refresh #1", timeout=30_000)  # dcc.Interval
    page.screenshot(path=SCREENSHOTS / "dashboard.png", full_page=True)
