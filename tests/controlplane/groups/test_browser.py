"""The console's consumer-group pages in a real headless Chromium, reading a real broker's group coordinator."""

import re

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition
from playwright.sync_api import expect

from tests.conftest import PASSWORD, SCREENSHOTS
from tests.controlplane.groups.real_cluster import create_topic, member, produce

pytestmark = pytest.mark.browser


def test_operator_sees_a_groups_lag(page, live_app, user, broker, names, settings):
    settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
    topic, group = names
    create_topic(broker, topic, 1)
    produce(broker, topic, {0: 7})
    with member(broker, group, topic) as consumer:
        consumer.commit(offsets=[KafkaTopicPartition(topic, 0, 2)], asynchronous=False)

        page.goto(f"{live_app}/groups/")
        expect(page).to_have_url(re.compile(r"/login/"))
        page.fill("#id_username", "operator")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        expect(page.get_by_role("heading", name="Consumer groups")).to_be_visible()
        page.get_by_role("link", name=group, exact=True).click()

        expect(page.get_by_role("heading", name=f"Consumer group {group}")).to_be_visible()
        expect(page.locator("#group-state")).to_have_text("Stable")
        expect(page.locator("#total-lag")).to_have_text("5")
        row = page.locator("#partitions tbody tr")
        expect(row).to_have_count(1)
        expect(row.locator("td")).to_have_text([topic, "0", "2", "7", "5", consumer.memberid(), "/127.0.0.1",
                                                "lag-test"])
        page.screenshot(path=SCREENSHOTS / "console-group-detail.png", full_page=True)
