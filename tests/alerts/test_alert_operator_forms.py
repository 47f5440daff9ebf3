"""The alerting pages an operator lives on: a rule form that shows only the chosen kind's
fields (with units, with and without JavaScript) and defaults that do not flap; a preview that
draws what the rule measured with its threshold; the firing chip (silenced alerts apart, the
worst severity); a Silence button on each firing alert with its matchers filled in; an email
channel refused while email cannot be sent; a delivery log that says one repeated error once."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts.channels.views import group_attempts
from dashboard.alerts.engine import evaluate_rules, firing_summary
from dashboard.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt, Notification, Silence
from dashboard.live import fragments
from dashboard.live.models import QueuePoint
from queues import alert_rules
from tests.support.alerting import facts, make_rule, signals

pytestmark = pytest.mark.django_db

RULE = {
    "name": "orders backlog",
    "kind": "backlog",
    "enabled": "on",
    "severity": "warning",
    "connection": "",
    "queue_glob": "orders-*",
    "threshold": "100",
    "resolve_threshold": "",
    "for_seconds": "60",
    "keep_firing_seconds": "0",
    "repeat_minutes": "240",
    "notify_resolved": "on",
}


def login_as(role: str | None, name: str = "") -> Client:
    user = User.objects.create_user(name or f"user-{role}", password="x")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    return client


def field_names(html: str) -> set[str]:
    return set(re.findall(r'id="field-(\w+)"', html))


# --- the rule form --------------------------------------------------------------------------


def test_the_rule_form_shows_only_the_fields_of_its_kind_with_units(scratch_queues):
    client = login_as("admin")
    backlog = client.get(reverse("alert_rule_new")).content.decode()
    fields = field_names(backlog)
    # The first kind (dead-letter depth): a count, no window, no minimum volume.
    assert {"queue_glob", "threshold", "resolve_threshold"} <= fields
    assert not fields & {"window_minutes", "min_volume", "include_due_delayed", "job_name"}
    assert "Threshold (jobs)" in backlog

    # htmx swaps in another kind's fields, keeping what was typed.
    ratio = client.get(
        reverse("alert_rule_fields"), {"kind": "failure_ratio", "queue_glob": "orders-*", "threshold": "5"}
    ).content.decode()
    assert ratio.startswith('<div id="rule-kind-fields"')
    assert field_names(ratio) == {"queue_glob", "threshold", "resolve_threshold", "window_minutes", "min_volume"}
    assert "Threshold (%)" in ratio and 'value="orders-*"' in ratio and 'value="5"' in ratio
    assert 'name="shown_kind" value="failure_ratio"' in ratio

    # A connection kind has no queue glob; a yes/no kind no threshold; a duration kind no
    # resolve threshold (its condition holds or not).
    unreachable = client.get(reverse("alert_rule_fields"), {"kind": "redis_unreachable"}).content.decode()
    assert field_names(unreachable) == set()
    paused = client.get(reverse("alert_rule_fields"), {"kind": "paused"}).content.decode()
    assert field_names(paused) == {"queue_glob", "threshold"} and "Threshold (seconds)" in paused
    memory = client.get(reverse("alert_rule_fields"), {"kind": "memory"}).content.decode()
    assert field_names(memory) == {"threshold", "resolve_threshold"}
    p95 = client.get(reverse("alert_rule_fields"), {"kind": "wait_p95"}).content.decode()
    assert {"window_minutes", "min_volume", "job_name"} <= field_names(p95)


def test_the_kind_fields_are_for_rule_authors_only(scratch_queues):
    assert login_as("operator").get(reverse("alert_rule_fields"), {"kind": "backlog"}).status_code == 403
    assert Client().get(reverse("alert_rule_fields"), {"kind": "backlog"}).status_code in (302, 401, 403)


def test_without_javascript_changing_the_kind_shows_its_fields_and_saves_nothing(scratch_queues):
    client = login_as("admin")
    # The page was showing backlog's fields; the kind was changed and the form posted.
    response = client.post(
        reverse("alert_rule_new"), {**RULE, "kind": "failure_ratio", "shown_kind": "backlog", "save": "1"}
    )
    assert response.status_code == 200 and not AlertRule.objects.exists()
    page = response.content.decode()
    assert "These are the fields of the kind you chose" in page
    assert {"window_minutes", "min_volume"} <= field_names(page) and "field-error" not in page
    assert 'value="orders backlog"' in page  # what was typed is kept
    # The same with the no-script button.
    page = client.post(reverse("alert_rule_new"), {**RULE, "kind": "stalled_window", "switch_kind": "1"})
    assert "window_minutes" in field_names(page.content.decode()) and not AlertRule.objects.exists()
    # Posted with its fields, it saves.
    saved = client.post(
        reverse("alert_rule_new"),
        {
            **RULE,
            **{"kind": "failure_ratio", "shown_kind": "failure_ratio", "threshold": "20", "window_minutes": "15"},
            "min_volume": "0",
        },
    )
    assert saved.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.kind, rule.threshold, rule.window_minutes) == ("failure_ratio", 20, 15)


def test_fields_another_kind_reads_are_neither_shown_nor_saved(scratch_queues):
    client = login_as("admin")
    response = client.post(
        reverse("alert_rule_new"),
        {**RULE, "min_volume": "5", "job_name": "x", "window_minutes": "15", "queue_glob": "orders-*"},
    )
    assert response.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.min_volume, rule.job_name, rule.window_minutes, rule.queue_glob) == (0, "", 5, "orders-*")
    # A connection kind drops a queue glob and a resolve threshold it cannot use.
    client.post(
        reverse("alert_rule_new"),
        {**RULE, "name": "down", "kind": "redis_unreachable", "queue_glob": "x", "resolve_threshold": "3"},
    )
    down = AlertRule.objects.get(name="down")
    assert (down.queue_glob, down.resolve_threshold, down.threshold) == ("", None, 0)


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"min_volume": 5}, "min_volume", "only applies to failure-ratio or wait-p95 or processing-p95 rules"),
        ({"kind": "dlq_depth", "include_due_delayed": True}, "include_due_delayed", "Only backlog rules can count"),
    ],
)
def test_the_model_still_refuses_a_field_its_kind_does_not_read(fields, field, message):
    """The form drops such values; the model (the Django admin, anything else) says why."""
    rule = AlertRule(name="r", **{"kind": "backlog", "threshold": 1, **fields})
    with pytest.raises(ValidationError) as refused:
        rule.full_clean()
    assert message in refused.value.message_dict[field][0]


def test_a_new_rule_starts_with_defaults_that_do_not_flap(scratch_queues):
    client = login_as("admin")
    page = client.get(reverse("alert_rule_new")).content.decode()
    assert re.search(r'name="for_seconds" value="60"', page)
    assert re.search(r'name="keep_firing_seconds" value="120"', page)
    # Editing keeps the rule's own values.
    rule = make_rule("quick", for_seconds=0, keep_firing_seconds=0)
    page = client.get(reverse("alert_rule_edit", args=[rule.pk])).content.decode()
    assert 'name="for_seconds" value="0"' in page and 'name="keep_firing_seconds" value="0"' in page


# --- the preview chart ------------------------------------------------------------------------


def test_the_preview_draws_the_measurements_with_the_threshold(scratch_queues):
    now = timezone.now().replace(second=30, microsecond=0)
    for minutes_ago in range(180):
        start = (now - dt.timedelta(minutes=minutes_ago)).replace(second=0)
        waiting = 500 if 100 <= minutes_ago < 120 else 3
        for queue, n in (("orders-1", waiting), ("orders-2", 7)):
            QueuePoint.objects.create(
                connection="default", prefix="bull", queue=queue, resolution=60, start=start, waiting=n
            )
    response = login_as("admin").post(
        reverse("alert_rule_new"), {**RULE, "resolve_threshold": "50", "for_seconds": "300", "preview": "1"}
    )
    chart = response.context["preview"].chart
    assert [line.label for line in chart.lines] == ["default/orders-1", "default/orders-2"]  # highest peak first
    # The scale holds the peak; the threshold line sits at 100 of it, the resolve line at 50.
    top = chart.y_ticks[-1]
    assert top[1] == "600" and chart.y_ticks[0][1] == "0"
    height = chart.bottom_y - chart.top
    assert chart.threshold_y == pytest.approx(chart.bottom_y - height * 100 / 600, abs=0.1)
    assert chart.resolve_y == pytest.approx(chart.bottom_y - height * 50 / 600, abs=0.1)
    ((x, width),) = chart.firing  # the one incident, 15 minutes of the day
    plot = chart.right_x - chart.left
    assert width == pytest.approx(plot * 15 / (24 * 60), abs=1)
    page = response.content.decode()
    svg = page[page.index('<figure class="preview-chart"') :]
    assert svg.count('<path class="series') == 2 and 'class="threshold"' in svg and 'class="resolve-threshold"' in svg
    assert 'class="firing-span"' in svg and "threshold 100 jobs" in svg and 'role="img"' in svg
    # The saved rule's page draws it too, on request.
    rule = make_rule("drawn", queue_glob="orders-*", threshold=100)
    detail = login_as(None, "viewer").get(reverse("alert_rule", args=[rule.pk]), {"preview": "1"})
    assert '<figure class="preview-chart"' in detail.content.decode()


def test_a_connection_kind_has_no_chart(scratch_queues):
    response = login_as("admin").post(reverse("alert_rule_new"), {**RULE, "kind": "memory", "preview": "1"})
    assert response.context["preview"].chart is None and "preview-chart" not in response.content.decode()


# --- the chip, silences -----------------------------------------------------------------------


def fire(rules: list[AlertRule], *queues: str) -> None:
    """One evaluation in which ``queues`` (every queue there is) are over every rule."""
    sigs = [signals(q, counts={"waiting": 500}) for q in queues]
    evaluate_rules(facts=facts(*sigs), now=timezone.now(), rules=rules)


def test_the_chip_counts_firing_and_silenced_apart_with_the_worst_severity(scratch_queues):
    _, empty = fragments.firing_alerts(firing_summary())
    assert empty == '<div id="firing-alerts"></div>'
    warn = make_rule("warn", threshold=10)
    crit = make_rule("crit", threshold=10, severity="critical")
    fire([warn], "a", "b", "c")
    fire([crit], "d")
    assert firing_summary() == firing_summary().__class__(firing=4, silenced=0, worst="critical")
    _, chip = fragments.firing_alerts(firing_summary())
    assert "4 firing" in chip and "worst critical" in chip and "silenced" not in chip and "sev-critical" in chip
    assert 'href="/alerts/?state=firing"' in chip

    Silence.objects.create(rule=crit, ends_at=timezone.now() + dt.timedelta(hours=1), author="a", comment="c")
    fire([warn], "a", "b", "c")
    fire([crit], "d")
    _, chip = fragments.firing_alerts(firing_summary())
    assert '3 firing</span> · <span class="chip-part">1 silenced' in chip and "worst warning" in chip
    # Many alerts: still one short line.
    fire([warn], "a", "b", "c", *(f"q{i}" for i in range(60)))
    _, chip = fragments.firing_alerts(firing_summary())
    assert "63 firing" in chip and len(chip) < 600


def test_silenced_alerts_are_not_counted_as_firing_on_the_rules_page(scratch_queues):
    rule = make_rule("counted", threshold=10)
    fire([rule], "a", "b")
    client = login_as(None, "viewer")
    assert re.search(r"state=firing\">2</a>", client.get(reverse("alert_rules")).content.decode())
    Silence.objects.create(queue_glob="a", ends_at=timezone.now() + dt.timedelta(hours=1), author="a", comment="c")
    fire([rule], "a", "b")
    assert re.search(r"state=firing\">1</a>", client.get(reverse("alert_rules")).content.decode())


def test_each_firing_alert_has_a_silence_button_with_its_matchers(scratch_queues):
    rule = make_rule("buttons", threshold=10)
    fire([rule], "orders[eu]*")  # glob characters in a queue name
    alert = Alert.objects.get(state=Alert.FIRING)
    history = login_as("admin").get(reverse("alert_history"), {"state": "firing"}).content.decode()
    link = re.search(r'<a class="button secondary silence-button" href="([^"]+)"', history).group(1)
    assert link.startswith("/alerts/silences/?") and link.endswith("#silence-form")
    # Viewers cannot silence: no button for them.
    assert "silence-button" not in login_as(None, "viewer").get(reverse("alert_history")).content.decode()

    client = login_as("admin", "admin-2")
    form_page = client.get(link.replace("&amp;", "&"))
    initial = form_page.context["silence_form"].initial
    assert initial["rule"] == str(rule.pk) and initial["connection"] == "default"
    assert initial["queue_glob"] == "orders[[]eu][*]"
    assert alert_rules.matches(
        alert_rules.Matcher(rule_id=rule.pk, connection="default", queue_glob=initial["queue_glob"]),
        rule_id=rule.pk,
        target=alert.target,
    )
    assert not alert_rules.matches(
        alert_rules.Matcher(queue_glob=initial["queue_glob"]),
        rule_id=rule.pk,
        target=alert.target.__class__("default", "bull", "orders-eu-2"),
    )
    assert "The matchers of the alert you chose are filled in" in form_page.content.decode()

    # Silencing from it marks the alert silenced at once (the chip and pages need not wait for
    # the next evaluation), and it leaves the firing count.
    response = client.post(
        reverse("silence_new"),
        {
            **{k: initial[k] for k in ("rule", "connection", "queue_glob")},
            "starts_at": initial["starts_at"].strftime("%Y-%m-%d %H:%M"),
            "hours": "2",
            "comment": "deploying a fix",
        },
    )
    assert response.status_code == 302
    alert.refresh_from_db()
    assert alert.silenced_by.startswith("silence by admin-2: deploying a fix")
    assert firing_summary().firing == 0 and firing_summary().silenced == 1
    history = client.get(reverse("alert_history"), {"state": "firing"}).content.decode()
    assert "silence-button" not in history and 'class="badge silenced"' in history
    # No notification is written by the silence itself; expiring it unmarks the alert at once.
    notes = Notification.objects.count()
    client.post(reverse("silence_expire", args=[Silence.objects.get().pk]))
    alert.refresh_from_db()
    assert alert.silenced_by == "" and Notification.objects.count() == notes


# --- channels ---------------------------------------------------------------------------------


def test_an_email_channel_cannot_be_saved_while_email_cannot_be_sent(settings):
    settings.EMAIL_BACKEND, settings.EMAIL_HOST = "django.core.mail.backends.smtp.EmailBackend", ""
    client = login_as("admin")
    form = client.get("/alerts/channels/new/").content.decode()
    assert "Email sending is not configured" in form  # said before anyone types
    email = {"name": "mail", "kind": "email", "enabled": "on", "to": "ops@example.test"}
    response = client.post("/alerts/channels/new/", email)
    assert response.status_code == 200 and not Channel.objects.exists()
    assert "Email sending is not configured" in response.context["form"].errors["kind"][0]
    # Disabled, it can be kept (to be enabled once the mail server is set).
    assert client.post("/alerts/channels/new/", {**email, "enabled": ""}).status_code == 302
    # The list says an enabled email channel cannot send.
    Channel.objects.create(name="old mail", kind="email", config={"to": ["a@example.test"]})
    assert "cannot send" in client.get("/alerts/channels/").content.decode()

    settings.EMAIL_HOST = "mail.example.test"
    assert client.post("/alerts/channels/new/", {**email, "name": "mail 2"}).status_code == 302
    assert "Email sending is not configured" not in client.get("/alerts/channels/new/").content.decode()


def attempt(channel, note, at, *, ok=False, detail="HTTP 503", retry=True):
    return DeliveryAttempt.objects.create(
        notification=note, channel=channel, number=1, at=at, ok=ok, will_retry=retry, detail=detail
    )


def test_the_delivery_log_says_a_repeated_error_once_with_its_count():
    channel = Channel.objects.create(name="hook", kind=Channel.WEBHOOK, config={"url": "http://127.0.0.1:9/"})
    t0 = timezone.now() - dt.timedelta(hours=1)
    notes = [
        Notification.objects.create(channel=channel, idempotency_key=f"k{i}", kind="firing", subject=f"n{i}")
        for i in range(4)
    ]
    attempt(channel, notes[0], t0, ok=True, detail="HTTP 202")
    for i, note in enumerate(notes):  # the receiver goes down: four notifications, one error
        attempt(channel, note, t0 + dt.timedelta(minutes=1 + i), detail="connection refused")
    attempt(channel, notes[3], t0 + dt.timedelta(minutes=6), detail="HTTP 503")
    attempt(channel, notes[3], t0 + dt.timedelta(minutes=7), detail="HTTP 503", retry=False)

    rows = group_attempts(DeliveryAttempt.objects.filter(channel=channel).order_by("-at", "-id"))
    assert [(r.attempt.detail, r.count) for r in rows] == [
        ("HTTP 503", 1),  # not retried: not the same outcome as the one before it
        ("HTTP 503", 1),
        ("connection refused", 4),
        ("HTTP 202", 1),
    ]
    assert rows[2].first_at == t0 + dt.timedelta(minutes=1) and len(rows[2].notifications) == 4

    page = login_as(None, "viewer").get(f"/alerts/channels/{channel.pk}/log/").content.decode()
    log = page[page.index('<table class="delivery-log">') :]
    assert log.count("connection refused") == 1 and "×4 in a row" in log and "and 3 other notifications" in log
