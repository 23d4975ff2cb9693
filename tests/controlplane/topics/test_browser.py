"""Every topic action of the console in a real headless Chromium, as an admin: the live name check, create, the
detail page, an inline config edit (refused by Kafka's validation, then accepted) and reset, adding partitions,
the consumer groups reading a topic with their lag (from a real lag-monitor HTTP server), preferred election and
deletion with the typed name; an operator sees the admin's buttons disabled with the reason. One test (one live
server): screenshots under var/screenshots/topics-*.png. Browsing and producing messages (and Avro) are in
test_message_browser.py, which has a broker."""

import re

import pytest
from playwright.sync_api import expect

from controlplane.access.actions import Role
from controlplane.topics.models import Partition, Topic
from monitoring.http_api import MonitorHttpServer
from tests.conftest import PASSWORD, SCREENSHOTS, user_with_role
from tests.monitoring.test_http_api import monitor  # noqa: F401 (the fixture: groups billing OK, slow WARN on orders)

pytestmark = pytest.mark.browser
SECRET = "cluster-s3cret"


@pytest.fixture
def lag_monitor(monitor, settings):  # noqa: F811
    server = MonitorHttpServer(monitor, secret=SECRET)
    server.start()
    settings.STROM_CLUSTER_SECRET = SECRET
    settings.STROM_LAG_MONITOR_URL = f"http://127.0.0.1:{server.port}"
    yield
    server.stop()


def log_in(page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Cluster overview")).to_be_visible()


def test_topic_actions_in_the_console(page, live_app, cluster, lag_monitor):
    user_with_role("alice", Role.ADMIN)
    user_with_role("olga", Role.OPERATOR)
    Partition.objects.filter(topic__name="orders", partition=0).update(leader=2)
    log_in(page, live_app, "alice")

    page.goto(f"{live_app}/topics/?sort=-partition_count")
    expect(page.locator("#topics tbody tr").first).to_contain_text("orders")
    page.screenshot(path=SCREENSHOTS / "topics-list.png", full_page=True)

    page.get_by_role("link", name="Create topic").click()
    name = page.locator("#topic-name")
    name.fill("bad name")
    expect(page.locator("#name-check")).to_contain_text("character other than ASCII alphanumerics")
    name.fill("orders")
    expect(page.locator("#name-check")).to_have_text("Topic 'orders' already exists.")
    name.fill("order_events")
    expect(page.locator("#name-check")).to_contain_text("Valid")
    page.fill("input[name=partitions]", "2")
    page.fill("input[name=replication_factor]", "2")
    page.get_by_text("Configs (blank: default)").click()
    page.fill("input[name='config.retention.ms']", "86400000")
    page.screenshot(path=SCREENSHOTS / "topics-create.png", full_page=True)
    page.get_by_role("button", name="Create topic").click()

    expect(page).to_have_url(re.compile(r"/topics/order_events/$"))
    expect(page.locator("#partition-count")).to_have_text("2")
    row = page.locator("#configs tr[data-config='retention.ms']")
    expect(row).to_contain_text("topic")
    segment = page.locator("#configs tr[data-config='segment.ms']")
    segment.locator("input[name=value]").fill("0")
    segment.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").first).to_contain_text("INVALID_CONFIG")
    segment = page.locator("#configs tr[data-config='segment.ms']")
    segment.locator("input[name=value]").fill("600000")
    segment.get_by_role("button", name="Save").click()
    expect(page.locator("#configs tr[data-config='segment.ms']")).to_contain_text("topic")
    assert Topic.objects.get(name="order_events").configs == {"retention.ms": "86400000", "segment.ms": "600000"}
    page.locator("#configs tr[data-config='retention.ms']").get_by_role("button", name="Reset").click()
    expect(page.get_by_role("status").first).to_contain_text("retention.ms is back to its default.")
    expect(page.locator("#configs tr[data-config='retention.ms'] td").nth(2)).to_have_text("default")
    assert Topic.objects.get(name="order_events").configs == {"segment.ms": "600000"}
    expect(page.locator("#consumers")).to_contain_text("No consumer group has committed offsets on this topic.")

    page.fill("#add-partitions input[name=count]", "3")
    page.get_by_role("button", name="Add partitions").click()
    expect(page.locator("#partition-count")).to_have_text("3")
    page.screenshot(path=SCREENSHOTS / "topics-detail.png", full_page=True)

    page.goto(f"{live_app}/topics/orders/")
    groups = page.locator("#consumer-groups tbody tr")
    expect(groups).to_have_count(2)
    expect(groups.nth(1)).to_contain_text("slow")
    expect(groups.nth(1).locator("td.lag").first).to_have_text("1786")
    expect(groups.nth(1).get_by_role("link", name="slow")).to_have_attribute("href", "/groups/slow/")
    page.locator("#consumers").screenshot(path=SCREENSHOTS / "topics-detail-groups.png")
    page.get_by_role("button", name="Elect preferred leaders").click()
    expect(page).to_have_url(re.compile(r"/topics/orders/$"))
    expect(page.get_by_role("status").first).to_contain_text("Elected a new leader for 1 partition(s)")

    page.goto(f"{live_app}/topics/order_events/")
    page.fill("#delete-topic input[name=confirm_name]", "order_event")
    page.get_by_role("button", name="Delete topic").click()
    expect(page.get_by_role("status").first).to_contain_text("Type the topic's name")
    page.fill("#delete-topic input[name=confirm_name]", "order_events")
    page.get_by_role("button", name="Delete topic").click()
    expect(page).to_have_url(re.compile(r"/topics/$"))
    assert not Topic.objects.filter(name="order_events").exists()

    page.get_by_role("button", name="Log out").click()
    log_in(page, live_app, "olga")
    page.goto(f"{live_app}/topics/orders/")
    expect(page.get_by_role("button", name="Delete topic")).to_be_disabled()
    expect(page.locator("#delete-topic")).to_contain_text(
        "Deleting topics needs the admin role; your role is operator.")
    expect(page.get_by_role("button", name="Elect preferred leaders")).to_be_enabled()
    page.screenshot(path=SCREENSHOTS / "topics-detail-operator.png", full_page=True)
