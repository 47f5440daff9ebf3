"""An alert email in Arabic, text and HTML, through a real local SMTP server: the channel
chooses the language of its emails."""

from __future__ import annotations

import pytest
from django.utils import timezone

from dashboard.alerts import sender
from dashboard.alerts.models import Channel, Notification

pytestmark = pytest.mark.django_db


def firing(channel: Channel) -> Notification:
    now = timezone.now()
    return Notification.objects.create(
        channel=channel,
        idempotency_key="rule-7:fp-1:firing",
        kind=Notification.FIRING,
        created_at=now,
        next_attempt_at=now,
        subject="[FIRING:1] طابور الطلبات — orders (default/bull)",
        payload={
            "status": "firing",
            "kind": "firing",
            "rule": {"id": 7, "name": "نمو الرسائل الميتة", "kind": "dlq_growth"},
            "alerts": [
                {
                    "fingerprint": "fp-1",
                    "state": "firing",
                    "value": 120,
                    "threshold": 50,
                    "silenced": True,
                    "target": {"connection": "default", "prefix": "bull", "queue": "orders"},
                    "summary": "dead letters growing by 120.0/min over 5 min",
                    "url": "/q/default/bull/orders/",
                }
            ],
        },
    )


def test_an_arabic_channel_sends_an_arabic_email_text_and_html(smtp):
    channel = Channel.objects.create(
        name="المناوبة", kind=Channel.EMAIL, config={"to": ["oncall@example.test"], "language": "ar"}
    )
    row = firing(channel)
    assert sender.send_due() == 1

    [(recipients, message)] = smtp.messages
    assert recipients == ["oncall@example.test"]
    # (the header is RFC 2047-encoded; decoding may leave a folding space in front)
    assert message["Subject"].strip() == "[نشِط:1] نمو الرسائل الميتة — orders (default/bull)"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert (
        "- [نشِط] orders (default/bull) — الرسائل المعطّلة تزداد بمعدل 120.0/د خلال 5 د (القيمة 120، العتبة 50) [مُسكَت]"
        in text
    )
    assert "افتح في Queuewatch: https://qw.example.test/q/default/bull/orders/" in text
    assert "أرسله Queuewatch عبر القناة «المناوبة»." in text and f"مفتاح عدم التكرار: {row.idempotency_key}" in text
    assert '<html lang="ar" dir="rtl">' in html
    assert ">افتح في Queuewatch</a>" in html and "<em>مُسكَت</em>" in html and "القيمة 120، العتبة 50" in html
    assert "<bdi>orders</bdi>" in html  # a queue name keeps its own direction in the right-to-left body
    # What the alert measured, recorded in English, reads in the channel's language.
    assert "الرسائل المعطّلة تزداد بمعدل 120.0/د خلال 5 د" in html and "dead letters growing" not in html
    for english in ("Open in Queuewatch", "Sent by Queuewatch", "Idempotency key", "threshold", "silenced"):
        assert english not in text and english not in html


def test_without_a_language_the_email_is_in_the_deployment_language(smtp, settings):
    channel = Channel.objects.create(name="ops", kind=Channel.EMAIL, config={"to": ["ops@example.test"]})
    row = firing(channel)
    assert sender.send_due() == 1
    [(_, message)] = smtp.messages
    assert message["Subject"].strip() == row.subject  # as written by the rule engine, in LANGUAGE_CODE
    html = message.get_body(("html",)).get_content()
    assert '<html lang="en" dir="ltr">' in html and "Open in Queuewatch" in html and "value 120, threshold 50" in html


def test_the_channel_form_offers_the_email_language(client, django_user_model):
    admin = django_user_model.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    from django.urls import reverse

    response = client.post(
        reverse("channel_new"),
        {"name": "mail", "kind": "email", "enabled": "on", "to": "a@example.test", "email_language": "ar"},
    )
    assert response.status_code == 302
    assert Channel.objects.get(name="mail").config == {"to": ["a@example.test"], "language": "ar"}
    form = client.get(reverse("channel_edit", args=[Channel.objects.get(name="mail").pk])).content.decode()
    assert '<option value="ar" selected>' in form
