"""Channel pages and admin: who may do what, CSRF, secrets never rendered back, validation
messages, escaping of hostile names and errors, and the "send test" button end to end against a
real local HTTP receiver."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.alerts.models import Channel, DeliveryAttempt, Notification
from dashboard.core.crypto import decrypt, decrypt_values
from tests.support.receivers import WebhookReceiver

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script>'
SECRET = "never-show-me-9f8e7d"
TOKEN_HEADER = "Bearer header-token-1a2b3c"


def user_with(role: str | None, name: str | None = None) -> User:
    user = User.objects.create_user(name or f"user-{role}", password="pw")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def client_for(role: str | None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user_with(role))
    return client


@pytest.fixture
def hook():
    return Channel.objects.create(
        name="ops-hook",
        kind=Channel.WEBHOOK,
        secret=SECRET,
        config={
            "url": "https://hooks.example.test/services/T0KEN/abc?key=QUERYSECRET",
            "shape": "slack",
            "headers": {"Authorization": TOKEN_HEADER},
            "timeout_s": 5,
        },
    )


def urls(channel_id: int) -> dict[str, str]:
    base = f"/alerts/channels/{channel_id}/"
    return {"edit": base + "edit/", "delete": base + "delete/", "test": base + "test/", "log": base + "log/"}


def webhook_form(**overrides) -> dict:
    data = {
        "name": "new-hook",
        "kind": "webhook",
        "enabled": "on",
        "url": "https://example.test/hook",
        "shape": "queuewatch",
        "timeout_s": "10",
        "content_type": "application/json",
        "headers": "",
        "to": "",
    }
    data.update(overrides)
    return data


def test_anonymous_users_are_sent_to_login_for_pages_and_posts(client, hook):
    for url in ["/alerts/channels/", "/alerts/channels/new/", *urls(hook.pk).values()]:
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 302 and "/login/" in response["Location"], url
    assert Channel.objects.count() == 1


@pytest.mark.parametrize("role", [None, "operator"])
def test_viewers_and_operators_see_channels_but_cannot_change_them(role, hook):
    client = client_for(role)
    page = client.get("/alerts/channels/")
    assert page.status_code == 200 and b"ops-hook" in page.content
    assert b"New channel" not in page.content and b"Send test" not in page.content
    assert client.get(urls(hook.pk)["log"]).status_code == 200

    assert client.get("/alerts/channels/new/").status_code == 403
    assert client.post("/alerts/channels/new/", webhook_form()).status_code == 403
    for name in ("edit", "delete"):
        assert client.get(urls(hook.pk)[name]).status_code == 403
    assert client.post(urls(hook.pk)["edit"], webhook_form(name="taken-over")).status_code == 403
    assert client.post(urls(hook.pk)["delete"]).status_code == 403
    assert client.post(urls(hook.pk)["test"]).status_code == 403
    assert list(Channel.objects.values_list("name", flat=True)) == ["ops-hook"]
    assert not Notification.objects.exists()


def test_csrf_is_enforced_on_channel_changes(hook):
    client = client_for("admin", csrf=True)
    assert client.post("/alerts/channels/new/", webhook_form()).status_code == 403
    assert client.post(urls(hook.pk)["delete"]).status_code == 403
    assert client.post(urls(hook.pk)["test"]).status_code == 403
    assert Channel.objects.count() == 1 and not Notification.objects.exists()

    client.get("/alerts/channels/new/")  # sets the CSRF cookie, as a browser would
    token = client.cookies["csrftoken"].value
    response = client.post("/alerts/channels/new/", {**webhook_form(), "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and Channel.objects.filter(name="new-hook").exists()


def test_admin_creates_email_and_webhook_channels():
    client = client_for("admin")
    # Only the email fields: the webhook ones may be left out entirely.
    response = client.post(
        "/alerts/channels/new/",
        {"name": "mail", "kind": "email", "enabled": "on", "to": "a@example.test, b@example.test\nc@example.test"},
    )
    assert response.status_code == 302
    assert Channel.objects.get(name="mail").config == {"to": ["a@example.test", "b@example.test", "c@example.test"]}

    response = client.post(
        "/alerts/channels/new/", webhook_form(secret="abc", headers="X-Team: payments\nAuthorization: Bearer t")
    )
    assert response.status_code == 302
    channel = Channel.objects.get(name="new-hook")
    assert channel.secret == "abc" and channel.kind == "webhook"
    stored_headers = channel.config["headers"]  # encrypted at rest (tests/security/test_secrets_at_rest.py)
    # The URL and header values are encrypted at rest (tests/security/test_secrets_at_rest.py).
    assert {**channel.config, "url": decrypt(channel.config["url"]), "headers": decrypt_values(stored_headers)} == {
        "url": "https://example.test/hook",
        "shape": "queuewatch",
        "timeout_s": 10,
        "headers": {"X-Team": "payments", "Authorization": "Bearer t"},
    }
    assert "created" in client.get("/alerts/channels/").content.decode()


def test_secrets_and_header_values_are_never_rendered(hook):
    client = client_for("admin")
    listing, edit, log = (
        client.get(u).content.decode() for u in ["/alerts/channels/", urls(hook.pk)["edit"], urls(hook.pk)["log"]]
    )
    for page in (listing, edit, log):
        assert SECRET not in page and TOKEN_HEADER not in page
    for page in (listing, log):  # only the edit form shows the full URL, to the admin editing it
        assert "T0KEN" not in page and "QUERYSECRET" not in page
    assert "A secret is set" in edit and "Authorization: (unchanged)" in edit
    assert "https://hooks.example.test" in listing  # the list shows where, not the token

    admin_client = Client()
    admin_client.force_login(User.objects.create_superuser("root", password="pw"))
    for url in ["/admin/alerts/channel/", f"/admin/alerts/channel/{hook.pk}/change/"]:
        page = admin_client.get(url)
        assert page.status_code == 200
        assert SECRET not in page.content.decode() and TOKEN_HEADER not in page.content.decode()


def test_editing_keeps_replaces_or_clears_the_secret_and_headers(hook):
    client = client_for("admin")
    edit = urls(hook.pk)["edit"]
    keep = webhook_form(name="ops-hook", url=hook.config["url"], shape="slack", headers="Authorization: (unchanged)")
    assert client.post(edit, keep).status_code == 302
    hook.refresh_from_db()
    assert hook.secret == SECRET and decrypt_values(hook.config["headers"]) == {"Authorization": TOKEN_HEADER}

    assert client.post(edit, {**keep, "secret": "rotated"}).status_code == 302
    hook.refresh_from_db()
    assert hook.secret == "rotated"

    assert client.post(edit, {**keep, "clear_secret": "on", "headers": ""}).status_code == 302
    hook.refresh_from_db()
    assert hook.secret == "" and hook.config["headers"] == {}


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "email", "to": "not-an-address"}, "“not-an-address” is not an email address."),
        ({"kind": "email", "to": ""}, "Give at least one address."),
        ({"url": "ftp://example.test/x"}, "Give a full http:// or https:// URL."),
        ({"url": "file:///etc/passwd"}, "Give a full http:// or https:// URL."),
        ({"headers": "Idempotency-Key: mine"}, "Idempotency-Key is set by Queuewatch"),
        ({"headers": "no colon here"}, "write each header as “Name: value”"),
        ({"headers": "X-New: (unchanged)"}, "there is no stored value for X-New"),
        ({"shape": "custom", "template": ""}, "A custom payload needs a template."),
        ({"shape": "custom", "template": '{"text": $SUBJECT}'}, "is not valid JSON"),
        ({"timeout_s": "300"}, "less than or equal to 30"),
        ({"name": "ops-hook"}, "Another channel already has this name."),
    ],
)
def test_bad_input_gets_a_clear_message(hook, data, message):
    response = client_for("admin").post("/alerts/channels/new/", webhook_form(**data))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Channel.objects.count() == 1


def test_a_valid_custom_template_is_accepted():
    client = client_for("admin")
    template = '{"text": "$SUBJECT: $SUMMARY", "alerts": $ALERTS_JSON}'
    assert client.post("/alerts/channels/new/", webhook_form(shape="custom", template=template)).status_code == 302
    assert Channel.objects.get().config["template"] == template


def test_hostile_names_and_errors_are_escaped(hook):
    hook.name = HOSTILE
    hook.last_error = "<img src=x onerror=alert(1)> HTTP 400"
    hook.last_error_at = hook.created_at
    hook.save()
    row = Notification.objects.create(channel=hook, idempotency_key="<k>", kind="firing", subject=HOSTILE, payload={})
    DeliveryAttempt.objects.create(
        notification=row, channel=hook, number=1, at=hook.created_at, ok=False, detail="<img src=x onerror=alert(2)>"
    )
    client = client_for("admin")
    for url in ["/alerts/channels/", urls(hook.pk)["log"], urls(hook.pk)["edit"], urls(hook.pk)["delete"]]:
        page = client.get(url).content.decode()
        assert HOSTILE not in page and "<img src=x" not in page, url
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page, url


def test_unknown_channel_is_a_404_with_a_message():
    client = client_for("admin")
    for url in urls(999).values():
        response = client.get(url) if not url.endswith("test/") else client.post(url)
        assert response.status_code == 404
        assert "There is no channel 999; it may have been deleted." in response.content.decode()


def test_send_test_delivers_now_and_shows_the_result():
    receiver = WebhookReceiver().start()
    try:
        channel = Channel.objects.create(
            name="hook", kind=Channel.WEBHOOK, config={"url": receiver.url, "shape": "queuewatch"}
        )
        client = client_for("admin")
        response = client.post(urls(channel.pk)["test"], follow=True)
        page = response.content.decode()
        assert response.redirect_chain[-1][0] == urls(channel.pk)["log"]
        assert "Test sent to “hook”: HTTP 200" in page and "delivered" in page
        [got] = receiver.received
        assert json.loads(got.body)["kind"] == "test"

        receiver.answers = [(400, {})]
        page = client.post(urls(channel.pk)["test"], follow=True).content.decode()
        assert "Test to “hook” failed: HTTP 400" in page and "&lt;b&gt;refused&lt;/b&gt;" in page
        assert Notification.objects.filter(kind="test", state="failed").count() == 1
    finally:
        receiver.stop()


def test_delete_asks_then_deletes(hook):
    client = client_for("admin")
    Notification.objects.create(channel=hook, idempotency_key="k", kind="firing", subject="s", payload={})
    page = client.get(urls(hook.pk)["delete"]).content.decode()
    assert "1 notification not yet delivered will never be sent" in page
    assert client.post(urls(hook.pk)["delete"]).status_code == 302
    assert not Channel.objects.exists() and not Notification.objects.exists()


def test_nav_links_to_channels(hook):
    assert 'href="/alerts/channels/"' in client_for(None).get("/alerts/channels/").content.decode()


def test_admin_lists_notifications_and_can_send_one_again(hook):
    row = Notification.objects.create(
        channel=hook, idempotency_key="k", kind="firing", subject="s", payload={}, state=Notification.FAILED
    )
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.get("/admin/alerts/notification/").status_code == 200
    assert client.get(f"/admin/alerts/notification/{row.pk}/change/").status_code == 200
    client.post("/admin/alerts/notification/", {"action": "send_again", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.state == Notification.PENDING


def test_django_admin_sets_the_secret_write_only(hook):
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    change = f"/admin/alerts/channel/{hook.pk}/change/"
    assert (
        client.post(change, {"name": "ops-hook", "kind": "webhook", "enabled": "on", "new_secret": ""}).status_code
        == 302
    )
    hook.refresh_from_db()
    assert hook.secret == SECRET and decrypt_values(hook.config["headers"]) == {"Authorization": TOKEN_HEADER}  # kept
    assert (
        client.post(
            change, {"name": "ops-hook", "kind": "webhook", "enabled": "on", "new_secret": "rotated"}
        ).status_code
        == 302
    )
    hook.refresh_from_db()
    assert hook.secret == "rotated"
    page = client.get(change).content.decode()
    assert "rotated" not in page and "(hidden)" in page
