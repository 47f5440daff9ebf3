"""What an alert measured is recorded in English (webhooks read it so) and shown in the reader's
language: every summary a rule kind writes is recognised from its text, rows recorded before
the summaries were marked included, and the alerts page shows them in Arabic with Arabic units."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from dashboard.alerts.models import Alert, AlertRule
from dashboard.alerts.wording import silenced_by_text, summary_text
from queues import alert_rules
from queues.alert_kinds import summaries
from queues.messages import Message

ENGLISH_UNIT = re.compile(r"\d\s*(ms|s|min|h|d)\b|/min\b")


def sample(template: Message) -> Message:
    """``template`` filled with values of the shape the rule kinds write."""
    values = {
        "age": summaries.duration(184),
        "late": summaries.duration(3600),
        "p95": summaries.duration(0.42),
        "every": summaries.duration(15),
        "how": summaries.summary(summaries.CRON_IN_ZONE, pattern="0 * * * *", zone="Europe/Paris"),
        "pattern": "*/5 * * * *",
        "zone": "UTC",
        "due": "2026-12-04 10:00:00",
        "error": "Connection refused",
        "policy": "allkeys-lru",
    }
    names = re.findall(r"\{(\w+)\}", template.msgid)
    return summaries.summary(template, **{n: values.get(n, "12.5") for n in names})


@pytest.mark.parametrize("template", summaries.SUMMARIES, ids=lambda m: m.msgid[:40])
def test_every_summary_is_recognised_from_its_english_and_reads_in_arabic(template):
    written = sample(template)
    found = summaries.recognised(str(written))
    assert isinstance(found, Message) and found.msgid == template.msgid and str(found) == str(written)
    with translation.override("ar"):
        arabic = summary_text(str(written))
    words = re.sub(r"maxmemory\S*|Europe/Paris|Connection refused|allkeys-lru|BullMQ|cron", "", arabic)
    assert arabic != str(written) and not re.search(r"[a-z]{4}", words), arabic
    assert not ENGLISH_UNIT.search(arabic), arabic


@pytest.mark.parametrize(
    ("recorded", "arabic"),
    [
        # As rows recorded before the summaries were marked read (seconds, milliseconds).
        ("oldest waiting job is 160 s old", "عمر أقدم مهمة منتظِرة 160 ث"),
        ("oldest waiting job is at least 2 min 40 s old", "عمر أقدم مهمة منتظِرة 2 د 40 ث على الأقل"),
        ("p95 wait 4.20 s over 12 jobs in 5 min", "زمن الانتظار p95: ‏4.20 ث (مهام: 12، خلال 5 د)"),
        ("on time (every 15000 ms)", "في الموعد (كل 15000 م‌ث)"),
        ("dead letters growing by 3.5/min over 5 min", "الرسائل المعطّلة تزداد بمعدل 3.5/د خلال 5 د"),
        (alert_rules.GONE, "لم يعد موجودًا (حُذف الطابور أو المُجدوِل، أو صار خارج نطاق القاعدة)"),
        # Text no summary wrote (a recipe's own kind) is shown as recorded.
        ("5 jobs over the quota of 10", "5 jobs over the quota of 10"),
    ],
)
def test_recorded_summaries_read_in_arabic(recorded, arabic):
    with translation.override("ar"):
        assert summary_text(recorded).replace("\u200f", "") == arabic.replace("\u200f", "")


@pytest.mark.django_db
def test_the_alerts_page_shows_the_summary_in_the_readers_language(admin_client):
    rule = AlertRule.objects.create(name="orders backlog", kind="oldest_waiting", threshold=60)
    Alert.objects.create(
        rule=rule,
        fingerprint="fp",
        connection="default",
        prefix="bull",
        queue="orders",
        state=Alert.FIRING,
        pending_since=timezone.now(),
        started_at=timezone.now(),
        summary="oldest waiting job is at least 3 min 4 s old",
        silenced_by="maintenance window “deploy” until 2026-12-06 04:00 UTC",
    )
    down = AlertRule.objects.create(name="shop down", kind="redis_unreachable")
    Alert.objects.create(
        rule=down,
        fingerprint="fp-down",
        connection="shop",
        state=Alert.FIRING,
        pending_since=timezone.now(),
        summary="unreachable: Connection refused",
    )
    arabic = admin_client.get(reverse("alert_history"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "<td>عمر أقدم مهمة منتظِرة 3 د 4 ث على الأقل</td>" in arabic
    assert 'title="نافذة الصيانة «deploy» حتى 2026-12-06 04:00 UTC"' in arabic  # what silenced it
    # The target is named in Arabic too (the connection's name is data).
    assert ">الاتصال «shop»</a></bdi>" in arabic and "<td>تعذّر الوصول: Connection refused</td>" in arabic
    english = admin_client.get(reverse("alert_history"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<td>oldest waiting job is at least 3 min 4 s old</td>" in english


@pytest.mark.django_db
def test_a_rules_periods_read_as_durations(admin_client):
    rule = AlertRule.objects.create(
        name="backlog", kind="backlog", threshold=10, for_seconds=300, keep_firing_seconds=90, repeat_minutes=60
    )
    detail = admin_client.get(reverse("alert_rule", args=[rule.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "معلَّق 5 د" in detail and "يبقى نشِطًا 1 د 30 ث" in detail and "يتكرر كل 1 س" in detail
    listed = admin_client.get(reverse("alert_rules"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "<td>5 د</td>" in listed
    english = admin_client.get(reverse("alert_rule", args=[rule.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "pending 5 min" in english and "keeps firing 1 min 30 s" in english and "repeats every 1 h" in english


def test_what_silenced_an_alert_reads_in_arabic_and_free_text_stays_as_written():
    with translation.override("ar"):
        assert silenced_by_text("silence by sam: deploy: db migration") == "إسكات من sam: deploy: db migration"
        assert silenced_by_text("something else") == "something else"


@pytest.mark.django_db
def test_the_rule_preview_says_what_it_could_not_replay_in_the_readers_language(admin_client):
    queue_rule = AlertRule.objects.create(name="backlog", kind="backlog", threshold=10)
    connection_rule = AlertRule.objects.create(name="down", kind="redis_unreachable")
    empty = admin_client.get(
        reverse("alert_rule", args=[queue_rule.pk]) + "?preview=1", HTTP_ACCEPT_LANGUAGE="ar"
    ).content.decode()
    assert "لا يوجد سجلّ مخزَّن للطوابير" in empty and "No stored history" not in empty
    about_connection = admin_client.get(
        reverse("alert_rule", args=[connection_rule.pk]) + "?preview=1", HTTP_ACCEPT_LANGUAGE="ar"
    ).content.decode()
    assert "هذا النوع من القواعد يخصّ الاتصال" in about_connection
