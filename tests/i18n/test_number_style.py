"""One numeral and decimal style in both languages (docs/arabic-glossary.md, "Numbers, dates and
units"): Western digits, "." before decimals, "," between thousands — Django's own formatting
in Arabic too, so a figure it writes reads like one ``{% num %}`` writes beside it — and a
running task's time left as a duration in the reader's words."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils import translation

from dashboard.actions.models import BulkTask
from dashboard.web.formatting import number_text


def test_django_writes_arabic_numbers_in_the_products_style():
    template = Template('{{ v|floatformat:1 }} {{ v|floatformat:"1g" }} {{ half }} {{ big|floatformat:"-2g" }}')
    with translation.override("ar"):
        text = template.render(Context({"v": 1234.56, "half": 0.5, "big": 1234567.891}))
        assert text == "1234.6 1,234.6 0.5 1,234,567.89"
        assert number_text(1234.56) == "1,234.6"  # the product's own rule agrees
    with translation.override("en"):
        assert template.render(Context({"v": 1234.56, "half": 0.5, "big": 1234567.891})) == text


@pytest.mark.django_db
def test_a_running_tasks_time_left_reads_as_a_duration(admin_client, admin_user):
    task = BulkTask.objects.create(
        created_by=admin_user,
        action="retry",
        connection="default",
        prefix="bull",
        queue="orders",
        selection={"state": "failed"},
        before_ms=0,
        reason="",
        state=BulkTask.RUNNING,
        total=1000,
        moved=100,
        rate_now=3.0,
    )
    arabic = admin_client.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "<dd>5 د</dd>" in arabic  # 900 jobs left at 3 a second
    english = admin_client.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<dd>5 min</dd>" in english
