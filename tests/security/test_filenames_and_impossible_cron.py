"""A raw queue name in Content-Disposition (a name with ``"; filename="x.html`` added a
parameter of its own), and an impossible cron date (``0 0 30 2 *``) gave a 500 on the cron
preview and, once saved as a maintenance window, on ``/alerts/silences/`` for everyone."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from django.urls import reverse

from dashboard.alerts.models import MaintenanceWindow

pytestmark = pytest.mark.django_db

EVIL_NAME = 'evil"; filename="x.html'


def parameters(header: str) -> list[str]:
    """Parameter names of a Content-Disposition header, honouring quoted strings."""
    return re.findall(r';\s*([^=;\s]+)=(?:"(?:[^"\\]|\\.)*"|[^;]*)', header)


def test_download_names_cannot_add_header_parameters(logged_in, prefixed_queues):
    scratch_queues = prefixed_queues.client
    base = prefixed_queues.queue(EVIL_NAME).base
    scratch_queues.hset(base + "meta", "opts.maxLenEvents", 10000)
    scratch_queues.hset(base + "1", mapping={"name": "n", "data": "{}", "timestamp": 1, "finishedOn": 2})
    scratch_queues.zadd(base + "failed", {"1": 2})
    args = prefixed_queues.args(EVIL_NAME)
    for url in (reverse("job_raw", args=[*args, "data", "1"]), reverse("queue_export", args=args) + "?state=failed"):
        response = logged_in.get(url)
        assert response.status_code == 200, url
        header = response["Content-Disposition"]
        assert parameters(header) == ["filename", "filename*"], header
        exact = unquote(header.split("filename*=UTF-8''", 1)[1])
        assert exact.startswith(EVIL_NAME)  # the real name survives, encoded
        if response.streaming:  # read to the end: the download's slot is given back
            b"".join(response.streaming_content)


def test_impossible_cron_date_is_a_clear_message_not_a_500(logged_in, django_user_model):
    response = logged_in.get(reverse("cron_preview"), {"cron": "0 0 30 2 *", "time_zone": "UTC"})
    assert response.status_code == 200 and "never fires" in response.content.decode()
    # A window saved before this check existed (or written straight to the database).
    MaintenanceWindow.objects.create(name="feb30", cron="0 0 30 2 *", duration_minutes=60, author="x", comment="c")
    admin = django_user_model.objects.create_superuser("root", password="pw")
    logged_in.force_login(admin)
    assert logged_in.get(reverse("silences")).status_code == 200
