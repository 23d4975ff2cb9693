"""The console in a real headless Chromium: log in, see the overview built from the metadata store."""

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD, SCREENSHOTS

pytestmark = pytest.mark.browser


def log_in(page, base_url: str, next_path: str = "/") -> None:
    page.goto(f"{base_url}{next_path}")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_login_and_overview(page, live_app, user, cluster):
    page.goto(f"{live_app}/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "wrong password")
    page.click("button[type=submit]")
    expect(page.get_by_role("alert")).to_contain_text("didn't match")

    log_in(page, live_app)
    expect(page.get_by_role("heading", name="Cluster overview")).to_be_visible()
    expect(page.locator("#brokers-running")).to_have_text(f"{cluster['running']} / {cluster['brokers']}")
    expect(page.locator("#partition-count")).to_have_text(str(cluster["partitions"]))
    expect(page.locator("#offline")).to_have_text(str(cluster["offline"]))
    nav = page.get_by_role("navigation", name="Main")
    for label in ("Overview", "Brokers", "Topics", "Consumer groups", "Reassignments", "Alerts", "Reports",
                  "Dashboard"):
        expect(nav.get_by_role("link", name=label, exact=True)).to_be_visible()
    page.screenshot(path=SCREENSHOTS / "console-overview.png", full_page=True)

    nav.get_by_role("link", name="Topics", exact=True).click()
    expect(page.get_by_role("cell", name="orders", exact=True)).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/login/"))
