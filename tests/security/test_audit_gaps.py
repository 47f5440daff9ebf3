"""Refusals (role, CSRF, validation), rule/channel/silence/window changes, send-test,
token issuance and role changes, and admin edits were not in the audit log. Each is now an
``AuditEntry`` (``dashboard.audit.log.record_event``), shown on the audit page."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard.accounts.models import ApiToken
from dashboard.alerts.models import AlertRule, Channel
from dashboard.audit.models import AuditEntry
from tests.support.receivers import WebhookReceiver

pytestmark = pytest.mark.django_db


def client_for(role: str, *, csrf: bool = False) -> tuple[Client, User]:
    user = User.objects.create_user(f"u-{role}-{User.objects.count()}", password="pw")
    if role != "viewer":
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client, user


def actions() -> list[tuple[str, str, str]]:
    return list(AuditEntry.objects.order_by("pk").values_list("username", "action", "outcome"))


def test_refusals_are_recorded(prefixed_queues):
    meta = prefixed_queues.queue("audited").key("meta")
    prefixed_queues.client.hset(meta, mapping={"opts.maxLenEvents": 10000})
    viewer, v = client_for("viewer")
    assert viewer.post(reverse("queue_action", args=[*prefixed_queues.args("audited"), "pause"])).status_code == 403
    assert viewer.post(reverse("alert_rule_delete", args=[1])).status_code == 403
    forged, f = client_for("admin", csrf=True)
    assert forged.post(reverse("silence_new"), {"reason": "x"}).status_code == 403
    operator, o = client_for("operator")
    response = operator.post(
        reverse("job_action", args=[*prefixed_queues.args("audited"), "discard", "nope"]), {"reason": ""}
    )
    assert response.status_code == 400  # a discard needs a reason
    recorded = actions()
    assert (v.username, "refused.role", "refused") in recorded
    assert sum(1 for r in recorded if r[:2] == (v.username, "refused.role")) == 2
    assert (f.username, "refused.csrf", "refused") in recorded
    assert (o.username, "refused.validation", "refused") in recorded
    assert prefixed_queues.client.hget(meta, "paused") is None


def test_rule_channel_silence_and_window_changes_and_send_test_are_recorded():
    admin, a = client_for("admin")
    receiver = WebhookReceiver().start()
    try:
        admin.post(
            reverse("channel_new"),
            {
                "name": "ops",
                "kind": "webhook",
                "enabled": "on",
                "url": receiver.url,
                "shape": "queuewatch",
                "timeout_s": "5",
                "content_type": "application/json",
                "headers": "",
                "to": "",
            },
        )
        channel = Channel.objects.get()
        admin.post(reverse("channel_new"), {"name": "", "kind": "webhook", "url": "nope"})  # refused by validation
        admin.post(reverse("channel_test", args=[channel.pk]))
        admin.post(reverse("channel_delete", args=[channel.pk]))
    finally:
        receiver.stop()
    rule = AlertRule.objects.create(name="backlog", kind="backlog", threshold=10)
    admin.post(reverse("alert_rule_delete", args=[rule.pk]))
    admin.post(reverse("silence_new"), {"reason": ""})  # refused by validation
    admin.post(
        reverse("window_new"),
        {"name": "nightly", "cron": "0 2 * * *", "time_zone": "UTC", "duration_minutes": "30", "reason": "deploys"},
    )
    recorded = [r[1:] for r in actions() if r[0] == a.username]
    for expected in [
        ("channel.create", "ok"),
        ("channel.create", "refused"),
        ("channel.test", "ok"),
        ("channel.delete", "ok"),
        ("rule.delete", "ok"),
        ("silence.create", "refused"),
    ]:
        assert expected in recorded, (expected, recorded)
    assert any(action == "window.create" for action, _ in recorded), recorded


def test_role_changes_tokens_and_admin_edits_are_recorded():
    user = User.objects.create_user("dana", password="pw")
    call_command("set_role", "dana", "operator", stdout=StringIO())
    call_command("api_token", "dana", stdout=StringIO())
    entry = AuditEntry.objects.get(action="user.set_role")
    assert entry.via == "cli" and entry.selection["to"] == "operator" and entry.selection["from"] == "viewer"
    assert AuditEntry.objects.filter(action="token.issue", via="cli").exists()
    superuser = User.objects.create_superuser("root", password="pw")
    admin = Client()
    admin.force_login(superuser)
    response = admin.post(
        reverse("admin:auth_user_change", args=[user.pk]),
        {
            "username": "dana",
            "is_active": "on",
            "is_superuser": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    edit = AuditEntry.objects.get(action="admin.change")
    assert edit.username == "root" and edit.via == "admin" and "dana" in edit.selection["object"]
    page = admin.get(reverse("audit")).content.decode()
    assert "admin.change" in page and "user.set_role" in page


def test_admin_delete_selected_records_each_deleted_object():
    """The admin's bulk "delete selected" writes its LogEntry rows with bulk_create (no
    post_save signal): each deleted object is audited all the same."""
    victims = [User.objects.create_user(f"gone-{i}", password="pw") for i in range(3)]
    superuser = User.objects.create_superuser("root", password="pw")
    admin = Client()
    admin.force_login(superuser)
    response = admin.post(
        reverse("admin:auth_user_changelist"),
        {"action": "delete_selected", "post": "yes", "_selected_action": [str(u.pk) for u in victims]},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert not User.objects.filter(username__startswith="gone-").exists()
    deleted = AuditEntry.objects.filter(action="admin.delete", username="root", via="admin")
    # Both sides sorted: the ids may cross a digit boundary (99, 100), which orders them as text apart.
    assert sorted(e.selection["object"] for e in deleted) == sorted(
        f"user {u.pk} “gone-{i}”" for i, u in enumerate(victims)
    )


def test_a_refused_token_revoke_is_recorded():
    owner = User.objects.create_user("owner", password="pw")
    call_command("api_token", "owner", stdout=StringIO())
    token = ApiToken.objects.get(user=owner)
    viewer, v = client_for("viewer")
    assert viewer.post(reverse("token_revoke", args=[token.pk])).status_code == 403
    token.refresh_from_db()
    assert token.revoked_at is None
    refused = AuditEntry.objects.get(username=v.username, action="refused.role")
    assert refused.outcome == "refused" and f"token {token.pk}" in refused.selection["object"]


def test_removing_a_schema_the_queue_does_not_have_is_a_clear_refusal_and_audited(prefixed_queues):
    args = prefixed_queues.args("no-schema")
    prefixed_queues.client.hset(prefixed_queues.queue("no-schema").key("meta"), mapping={"opts.maxLenEvents": 10000})
    admin, a = client_for("admin")
    page = admin.post(reverse("queue_action", args=[*args, "remove-schema"]))
    assert page.status_code == 409 and b"has no job schema" in page.content
    fragment = admin.post(reverse("queue_action", args=[*args, "remove-schema"]), HTTP_HX_REQUEST="true")
    assert b"has no job schema" in fragment.content and b'class="action-result ok"' not in fragment.content
    token_out = StringIO()
    call_command("api_token", a.username, stdout=token_out)
    api = admin.post(
        reverse("api_queue_action", args=[*args, "remove-schema"]),
        "{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token_out.getvalue().strip()}",
    )
    assert (
        api.status_code == 409 and api.json()["outcome"] == "no_schema" and "has no job schema" in api.json()["message"]
    )
    rows = AuditEntry.objects.filter(action="queue.remove-schema", username=a.username)
    assert rows.count() == 3 and {r.outcome for r in rows} == {"refused"}
