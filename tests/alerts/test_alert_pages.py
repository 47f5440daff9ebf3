"""Alerting pages: who may change what (viewer/operator 403, admin allowed, CSRF enforced),
validation messages users can act on, hostile strings escaped, the 24-hour preview from
stored history, and the firing-alerts banner over the websocket."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts.engine import evaluate_rules, firing_summary
from dashboard.alerts.models import Alert, AlertRule, MaintenanceWindow, Silence
from dashboard.live import fragments
from dashboard.live.models import QueuePoint
from tests.support.alerting import facts, make_channel, make_rule, signals

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script>'


def login_as(role: str | None) -> Client:
    user = User.objects.create_user(f"user-{role}", password="x")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    return client


RULE_POST = {
    "name": "backlog",
    "kind": "backlog",
    "enabled": "on",
    "severity": "warning",
    "connection": "",
    "queue_glob": "orders-*",
    "threshold": "100",
    "resolve_threshold": "",
    "window_minutes": "5",
    "min_volume": "0",
    "for_seconds": "60",
    "keep_firing_seconds": "0",
    "repeat_minutes": "240",
    "notify_resolved": "on",
}


def mutations(rule, silence, window):
    return [
        ("get", reverse("alert_rule_new"), {}),
        ("post", reverse("alert_rule_new"), RULE_POST),
        ("post", reverse("alert_rule_edit", args=[rule.pk]), RULE_POST),
        ("post", reverse("alert_rule_delete", args=[rule.pk]), {}),
        ("post", reverse("silence_new"), {"comment": "x", "starts_at": "2026-01-01 00:00", "hours": "1"}),
        ("post", reverse("silence_expire", args=[silence.pk]), {}),
        (
            "post",
            reverse("window_new"),
            {"name": "w", "cron": "0 2 * * *", "time_zone": "UTC", "duration_minutes": "60", "comment": "x"},
        ),
        ("post", reverse("window_delete", args=[window.pk]), {}),
    ]


@pytest.fixture
def rows(scratch_queues):
    rule = make_rule("existing")
    silence = Silence.objects.create(ends_at=timezone.now() + dt.timedelta(hours=1), author="a", comment="c")
    window = MaintenanceWindow.objects.create(name="w", cron="0 2 * * *", duration_minutes=60, author="a", comment="c")
    return rule, silence, window


@pytest.mark.parametrize("role", [None, "operator"])
def test_viewers_and_operators_get_403_on_every_change(rows, role):
    client = login_as(role)
    for method, url, data in mutations(*rows):
        assert getattr(client, method)(url, data).status_code == 403, url
    assert AlertRule.objects.count() == 1 and Silence.objects.count() == 1 and MaintenanceWindow.objects.count() == 1
    for name in ("alert_rules", "alert_history", "silences"):  # reading is for everyone
        assert client.get(reverse(name)).status_code == 200


def test_admins_change_rules_silences_and_windows(rows):
    client = login_as("admin")
    rule, silence, window = rows
    assert client.post(reverse("alert_rule_new"), RULE_POST).status_code == 302
    created = AlertRule.objects.get(name="backlog")
    assert (created.queue_glob, created.threshold, created.for_seconds) == ("orders-*", 100, 60)
    response = client.post(reverse("silence_new"), {"comment": "deploy", "starts_at": "2026-01-01 10:00", "hours": "2"})
    assert response.status_code == 302
    made = Silence.objects.get(comment="deploy")
    assert made.author == "user-admin" and made.ends_at - made.starts_at == dt.timedelta(hours=2)
    assert client.post(reverse("silence_expire", args=[silence.pk])).status_code == 302
    silence.refresh_from_db()
    assert silence.ends_at <= timezone.now()
    assert client.post(reverse("window_delete", args=[window.pk])).status_code == 302
    assert client.post(reverse("alert_rule_delete", args=[rule.pk])).status_code == 302
    assert not MaintenanceWindow.objects.exists() and not AlertRule.objects.filter(pk=rule.pk).exists()


def test_csrf_is_enforced_on_changes(rows):
    user = User.objects.create_user("boss", password="x", is_superuser=True)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(reverse("alert_rule_new"), RULE_POST).status_code == 403
    assert client.post(reverse("silence_new"), {"comment": "x", "hours": "1"}).status_code == 403
    assert not AlertRule.objects.filter(name="backlog").exists()


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"threshold": "lots"}, "threshold", "The threshold must be a number"),
        ({"threshold": "-3"}, "threshold", "The threshold cannot be negative."),
        ({"threshold": "10", "resolve_threshold": "50"}, "resolve_threshold", "must be at or below the threshold (10)"),
        ({"kind": "failure_ratio", "threshold": "150"}, "threshold", "A percentage cannot be above 100"),
        ({"kind": "no_completions", "threshold": "30"}, "threshold", "needs T of at least 60 seconds"),
        ({"connection": "nope"}, "connection", "Select a valid choice"),
    ],
)
def test_rule_form_says_what_is_wrong(rows, changes, field, message):
    response = login_as("admin").post(reverse("alert_rule_new"), {**RULE_POST, **changes})
    assert response.status_code == 200
    assert message in response.context["form"].errors[field][0]
    assert message.replace('"', "&quot;") in response.content.decode()
    assert not AlertRule.objects.filter(name="backlog").exists()


@pytest.mark.parametrize(
    "cron, tz, field, message",
    [
        ("61 * * * *", "UTC", "cron", "is not a valid cron expression"),
        ("* * *", "UTC", "cron", "has 3 fields"),
        ("0 2 * * *", "Mars/Olympus", "time_zone", "Unknown time zone"),
    ],
)
def test_maintenance_window_form_explains_bad_cron_and_zone(rows, cron, tz, field, message):
    response = login_as("admin").post(
        reverse("window_new"), {"name": "n", "cron": cron, "time_zone": tz, "duration_minutes": "30", "comment": "c"}
    )
    assert response.status_code == 400
    assert message in response.context["window_form"].errors[field][0]


def test_silence_must_end_after_it_starts_and_needs_a_comment(rows):
    response = login_as("admin").post(
        reverse("silence_new"), {"starts_at": "2026-01-01 10:00", "ends_at": "2026-01-01 09:00"}
    )
    errors = response.context["silence_form"].errors
    assert "The silence must end after it starts." in errors["ends_at"] and "comment" in errors


def test_cron_preview_lists_the_next_five_starts_in_its_zone(rows):
    client = login_as(None)
    body = client.get(reverse("cron_preview"), {"cron": "30 2 * * *", "time_zone": "Europe/Paris"}).content.decode()
    assert body.count("<li>") == 5 and "02:30" in body and ("CET" in body or "CEST" in body)
    bad = client.get(reverse("cron_preview"), {"cron": HOSTILE, "time_zone": "UTC"}).content.decode()
    assert "has 3 fields" not in bad and HOSTILE not in bad and "&lt;script&gt;" in bad


def test_hostile_strings_are_escaped_on_every_alerting_page(rows):
    rule = make_rule(HOSTILE, queue_glob="*", channels=[make_channel(HOSTILE)])
    Silence.objects.create(
        queue_glob="nothing", ends_at=timezone.now() + dt.timedelta(hours=1), author=HOSTILE, comment=HOSTILE
    )
    MaintenanceWindow.objects.create(
        name=HOSTILE, cron="0 2 * * *", duration_minutes=5, author=HOSTILE, comment=HOSTILE
    )
    now = timezone.now()
    for minutes_ago in range(5):
        QueuePoint.objects.create(
            connection="default",
            prefix="bull",
            queue=HOSTILE,
            resolution=60,
            waiting=50,
            start=(now - dt.timedelta(minutes=minutes_ago)).replace(second=0, microsecond=0),
        )
    evaluate_rules(facts=facts(signals(HOSTILE, counts={"waiting": 50})), now=now)
    assert Alert.objects.filter(state=Alert.FIRING, queue=HOSTILE).exists()
    client = login_as(None)
    pages = [reverse(n) for n in ("alert_rules", "alert_history", "silences")] + [
        reverse("alert_rule", args=[rule.pk]) + "?preview=1"
    ]
    for url in pages:
        body = client.get(url).content.decode()
        assert HOSTILE not in body, url
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body, url
    _, banner = fragments.firing_alerts(firing_summary())
    # A summary, no names; the fixture's silence matches everything: both are silenced.
    assert HOSTILE not in banner and "2 silenced" in banner and "firing</span>" not in banner


def test_preview_replays_the_rule_over_stored_history(rows):
    now = timezone.now().replace(second=30, microsecond=0)
    # Two hours ago the backlog of orders-1 stood at 500 for 20 minutes; it is small otherwise.
    for minutes_ago in range(0, 180):
        start = (now - dt.timedelta(minutes=minutes_ago)).replace(second=0)
        waiting = 500 if 100 <= minutes_ago < 120 else 3
        QueuePoint.objects.create(
            connection="default", prefix="bull", queue="orders-1", resolution=60, start=start, waiting=waiting
        )
    client = login_as("admin")
    response = client.post(reverse("alert_rule_new"), {**RULE_POST, "for_seconds": "300", "preview": "1"})
    preview = response.context["preview"]
    assert not AlertRule.objects.filter(name="backlog").exists()  # previewing saves nothing
    (incident,) = preview.fired
    assert incident.target.queue == "orders-1" and incident.peak == 500
    assert dt.timedelta(minutes=119) <= now - incident.pending_at <= dt.timedelta(minutes=121)
    assert incident.fired_at - incident.pending_at == dt.timedelta(minutes=5)
    assert incident.resolved_at - incident.pending_at == dt.timedelta(minutes=20)
    assert preview.notifications == 2
    assert "1 incident</strong> would have fired" in response.content.decode()
    # A rule that only needs 30 minutes of backlog would not have fired at all.
    response = client.post(reverse("alert_rule_new"), {**RULE_POST, "for_seconds": "1800", "preview": "1"})
    assert response.context["preview"].fired == []


def test_preview_of_a_wide_rule_replays_a_bounded_number_of_queues(rows, monkeypatch):
    from dashboard.alerts import preview

    monkeypatch.setattr(preview, "MAX_QUEUES", 2)
    # Scoped to this test's queues: the count in the note must not depend on minute rows anything
    # else in the database holds.
    rows[0].queue_glob = "wide-*"
    rows[0].save()
    start = timezone.now().replace(second=0, microsecond=0)
    for name in ("wide-a", "wide-b", "wide-c", "narrow"):
        QueuePoint.objects.create(
            connection="default", prefix="bull", queue=name, resolution=60, start=start, waiting=1
        )
    client = login_as(None)
    response = client.get(reverse("alert_rule", args=[rows[0].pk]))
    assert response.context["preview"] is None  # only on request
    result = client.get(reverse("alert_rule", args=[rows[0].pk]), {"preview": "1"}).context["preview"]
    assert result.queues == 2 and result.note == "Replayed on the first 2 of the 3 queues this rule covers."


def test_django_admin_lists_and_validates_rules_silences_and_windows(rows):
    boss = User.objects.create_user("boss", password="x", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(boss)
    for model in ("alertrule", "alert", "silence", "maintenancewindow"):
        assert client.get(f"/admin/alerts/{model}/").status_code == 200, model
    response = client.post(
        "/admin/alerts/maintenancewindow/add/",
        {"name": "bad", "cron": "0 2 * *", "time_zone": "UTC", "duration_minutes": "10", "author": "a", "comment": "c"},
    )
    assert response.status_code == 200 and "has 4 fields" in response.content.decode()
    assert not MaintenanceWindow.objects.filter(name="bad").exists()
