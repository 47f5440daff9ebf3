"""In real Chromium: an admin creates a webhook channel (only the chosen kind's settings are
shown), sends a test to a real local receiver and reads the result in the delivery log; a
hostile channel name stays inert text and the secret never comes back into the page."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from tests.support.browser import follow, log_in
from tests.support.receivers import WebhookReceiver

pytestmark = [pytest.mark.e2e, pytest.mark.node]

NAME = "<img src=x onerror=alert(1)> on-call"


def test_admin_creates_a_webhook_channel_and_sends_a_test(page, live_app):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    receiver = WebhookReceiver().start()
    try:
        log_in(page, live_app)
        page.click("nav >> text=Channels")
        follow(page, "text=New channel")  # and its deferred script, showing one kind's settings, has run

        page.select_option("select[name=kind]", "email")
        assert page.is_visible("textarea[name=to]") and not page.is_visible("input[name=url]")
        page.select_option("select[name=kind]", "webhook")
        assert page.is_visible("input[name=url]") and not page.is_visible("textarea[name=to]")

        page.fill("input[name=name]", NAME)
        page.fill("input[name=url]", receiver.url)
        page.fill("input[name=secret]", "e2e-signing-secret")
        page.fill("textarea[name=headers]", "X-Team: payments")
        page.click("form.channel-form button[type=submit]")
        page.wait_for_selector("table.channels")
        assert page.locator("table.channels td a", has_text="on-call").inner_text() == NAME

        follow(page, "text=Send test")  # a form's POST, redirected to the log: loaded whole
        page.wait_for_selector("table.delivery-log")
        assert "delivered" in page.locator("table.delivery-log").inner_text()
        [got] = receiver.received
        expected = "sha256=" + hmac.new(b"e2e-signing-secret", got.body, hashlib.sha256).hexdigest()
        assert got.headers["x-queuewatch-signature"] == expected and got.headers["x-team"] == "payments"
        assert json.loads(got.body)["channel"] == NAME

        follow(page, "text=Edit")
        assert page.input_value("input[name=secret]") == ""
        assert "e2e-signing-secret" not in page.content()
        assert "A secret is set" in page.inner_text("form.channel-form")
        assert page.locator("main img").count() == 0 and dialogs == []
    finally:
        receiver.stop()
