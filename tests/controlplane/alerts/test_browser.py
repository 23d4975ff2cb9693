"""The Alerts page in Chromium: an operator adds a Slack endpoint through the form, sees its secret once,
sends a test (it reaches a real receiver through the outbox) and finds it in the delivery log, then edits the
endpoint (threshold and reminder interval; the secret stays); a viewer sees the same pages with the buttons
disabled. Screenshots: var/screenshots/alerts-*.png."""

import json

import pytest
from playwright.sync_api import expect

from controlplane.access.actions import Role
from controlplane.alerts import outbox
from controlplane.alerts.models import Delivery, WebhookEndpoint
from tests.conftest import PASSWORD, SCREENSHOTS, user_with_role
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.slow


def log_in(page, live_app, username: str) -> None:
    page.goto(f"{live_app}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_app}/")


def test_an_operator_adds_an_endpoint_and_sends_a_test(page, live_app, monkeypatch):
    sent = []
    monkeypatch.setattr(outbox, "wake", lambda ids, countdown_s=0.0: sent.extend(ids))
    receiver = Receiver()
    user_with_role("olga", Role.OPERATOR)
    user_with_role("vic", Role.VIEWER)
    log_in(page, live_app, "olga")
    page.goto(f"{live_app}/alerts/")
    page.click("summary")
    page.fill("#id_name", "team-chat")
    page.fill("#id_url", receiver.url)
    page.select_option("#id_preset", "slack")
    page.fill("#id_headers", '{"X-Team": "data"}')
    page.click("#endpoint-form button[data-action=manage_alerts]")
    expect(page.locator("#endpoint-secret")).to_contain_text("whsec_")
    page.click("#endpoints button:has-text('Send test')")
    expect(page.locator("#deliveries")).to_contain_text("strom-test")
    [delivery_id] = sent
    assert outbox.send(delivery_id).state == Delivery.State.DELIVERED
    page.goto(f"{live_app}/alerts/")
    expect(page.locator("#deliveries")).to_contain_text("delivered")
    page.screenshot(path=str(SCREENSHOTS / "alerts-operator.png"), full_page=True)
    secret = WebhookEndpoint.objects.get().secret
    page.click("#endpoints a:has-text('Edit')")
    expect(page.locator("#id_url")).to_have_value(receiver.url)
    page.select_option("#id_notify_threshold", "ERR")
    page.fill("#id_reminder_interval_s", "1800")
    page.screenshot(path=str(SCREENSHOTS / "alerts-endpoint-edit.png"), full_page=True)
    page.click("#endpoint-edit-form button[data-action=manage_alerts]")
    expect(page.locator("#endpoints")).to_contain_text("ERR only, reminded every 1800 s")
    edited = WebhookEndpoint.objects.get()
    assert (edited.notify_threshold, edited.reminder_interval_s, edited.secret) == ("ERR", 1800, secret)
    receiver.close()
    [(_, _, headers, body)] = receiver.requests
    assert headers["x-team"] == "data" and "strom-test" in json.loads(body)["text"]
    page.context.clear_cookies()
    log_in(page, live_app, "vic")
    page.goto(f"{live_app}/alerts/")
    expect(page.locator("#endpoints button:has-text('Send test')")).to_be_disabled()
    page.screenshot(path=str(SCREENSHOTS / "alerts-viewer.png"), full_page=True)
    page.click("#endpoints a:has-text('Edit')")
    expect(page.locator("#endpoint-edit-form button[data-action=manage_alerts]")).to_be_disabled()
