"""Roles and the audit log in a real headless Chromium, against a real broker's consumer group: a viewer sees the
group's delete button disabled with its reason (and a forged click is refused), an operator previews and executes
an offset reset, and the audit page shows both the change and the refusal. Screenshots: var/screenshots/."""

import re

import pytest
from playwright.sync_api import expect

from controlplane.access.actions import Role
from tests.conftest import PASSWORD, SCREENSHOTS, user_with_role
from tests.controlplane.groups.real_cluster import BROKER_OVERRIDES, commit, committed, create_topic, produce
from tests.support.broker import standalone_broker

pytestmark = pytest.mark.browser

TOPIC, GROUP = "payments", "billing"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker"), BROKER_OVERRIDES) as running:
        create_topic(running, TOPIC, 2)
        produce(running, TOPIC, {0: 6, 1: 4})
        commit(running, GROUP, TOPIC, {0: 5, 1: 3})  # then the member leaves: the group is Empty
        yield running


def log_in(page, live_app, username: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{live_app}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("#role")).to_be_visible()


def test_viewer_refused_operator_resets_and_the_audit_page_shows_both(page, live_app, broker, settings):
    settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
    user_with_role("vera", Role.VIEWER)
    user_with_role("otto", Role.OPERATOR)

    log_in(page, live_app, "vera")
    expect(page.locator("#role")).to_have_text("viewer")
    page.goto(f"{live_app}/groups/{GROUP}/")
    expect(page.locator("#group-state")).to_have_text("Empty")
    delete = page.locator("button[data-action=delete_consumer_group]")
    expect(delete).to_be_disabled()
    reason = "Deleting consumer groups needs the operator role; your role is viewer."
    expect(delete).to_have_attribute("title", reason)
    expect(page.locator("#delete-group .refusal")).to_have_text(reason)
    expect(page.locator("button[data-action=reset_offsets]").first).to_be_disabled()
    page.locator("#delete-group").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "access-viewer-delete-disabled.png", full_page=True)

    # A viewer who forges the click (enables the button by hand) is refused by the server, with the same reason.
    page.check("#delete-group input[name=confirm]")
    delete.evaluate("button => { button.disabled = false; button.removeAttribute('aria-disabled'); }")
    delete.click()
    expect(page.locator("#refusal")).to_have_text(reason)
    page.screenshot(path=SCREENSHOTS / "access-viewer-forged-delete-refused.png", full_page=True)
    assert committed(broker, GROUP, TOPIC, 2) == {0: 5, 1: 3}

    log_in(page, live_app, "otto")
    page.goto(f"{live_app}/groups/{GROUP}/")
    page.select_option("#id_spec", "to-earliest")
    page.click("button[data-action=reset_offsets][value=preview]")
    expect(page.locator("#reset-plan tbody tr")).to_have_count(2)
    expect(page.locator("#reset-plan tbody tr").first.locator("td")).to_have_text([TOPIC, "0", "5", "0", "6", "6"])
    page.click("button[data-action=reset_offsets][value=execute]")
    expect(page.locator(".message.success")).to_have_text(
        f"Reset the offsets of 2 partition(s) of group '{GROUP}' (to-earliest).")
    expect(page.locator("#total-lag")).to_have_text("10")
    page.screenshot(path=SCREENSHOTS / "access-operator-reset-offsets.png", full_page=True)
    assert committed(broker, GROUP, TOPIC, 2) == {0: 0, 1: 0}

    page.get_by_role("link", name="Audit log").click()
    rows = page.locator("#audit tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("otto")
    expect(rows.nth(0)).to_contain_text("reset_offsets")
    expect(rows.nth(0)).to_contain_text(f"group:{GROUP}")
    expect(rows.nth(0).locator(".result")).to_have_text("Done")
    expect(rows.nth(1)).to_contain_text("vera")
    expect(rows.nth(1)).to_contain_text("delete_consumer_group")
    expect(rows.nth(1).locator(".result")).to_have_text("Refused")
    expect(rows.nth(1)).to_contain_text(reason)
    page.screenshot(path=SCREENSHOTS / "access-audit-log.png", full_page=True)
    page.select_option("select[name=result]", "refused")
    page.click(".filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"result=refused"))
    expect(rows).to_have_count(1)
