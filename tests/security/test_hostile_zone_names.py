"""A time-zone name is looked up as a file under the zone database: one of 10,000 characters
made the lookup raise ``OSError`` (file name too long), which nothing expected: a 500 for the cron
preview, the scheduler edit, and every viewer of a schedulers page holding a producer's scheduler
with such a zone. Now every zone is refused with a message, and a stored one costs only its row."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.alerts.models import MaintenanceWindow
from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with

pytestmark = pytest.mark.django_db

LONG = "Europe/" + "x" * 10_000
HOSTILE_ZONES = [LONG, "../../etc/passwd", "/etc/passwd", "a\x00b"]


@pytest.mark.parametrize("tz", HOSTILE_ZONES)
def test_the_cron_preview_refuses_a_hostile_zone_with_a_message(logged_in, tz):
    response = logged_in.get(reverse("cron_preview"), {"cron": "0 2 * * *", "time_zone": tz})
    assert response.status_code == 200
    assert "time zone" in response.content.decode()


@pytest.mark.parametrize("tz", HOSTILE_ZONES)
def test_a_window_with_a_hostile_zone_is_refused_and_the_silences_page_renders(client, scratch_queues, tz):
    client.force_login(user_with("admin"))
    fields = {"name": "w", "cron": "0 2 * * *", "time_zone": tz, "duration_minutes": "60", "comment": "x"}
    response = client.post(reverse("window_new"), fields)
    assert response.status_code == 400 and "time zone" in response.content.decode().lower()
    assert not MaintenanceWindow.objects.exists()
    assert client.get(reverse("silences")).status_code == 200


@pytest.fixture
def stored(prefixed_queues):
    """Queue ``q``: scheduler ``far`` as a producer stored it, a cron pattern in a zone of 10,000
    characters (with an end date, so whether it is finished is asked of its pattern), and ``calm``."""
    r, p = prefixed_queues.client, prefixed_queues.prefix
    r.hset(f"{p}:q:meta", mapping={"opts.maxLenEvents": 10000})
    r.hset(
        f"{p}:q:repeat:far",
        mapping={
            "name": "far-job",
            "pattern": "0 3 * * *",
            "tz": LONG,
            "ic": 1,
            "limit": 5,
            "endDate": 4_102_444_800_000,
        },
    )
    r.hset(f"{p}:q:repeat:calm", mapping={"name": "calm-job", "every": 60000, "ic": 1})
    r.zadd(f"{p}:q:repeat", {"far": 1_700_000_000_000, "calm": 1_700_000_000_000})
    return prefixed_queues


def test_a_stored_scheduler_with_a_hostile_zone_costs_only_its_row(logged_in, stored):
    for url in (reverse("schedulers"), reverse("queue_schedulers", args=stored.args("q"))):
        response = logged_in.get(url)
        assert response.status_code == 200, url
        assert "far-job" in response.content.decode() and "calm-job" in response.content.decode()
    assert logged_in.get(reverse("api_queue", args=stored.args("q"))).status_code == 200


@pytest.mark.parametrize("tz", HOSTILE_ZONES)
def test_the_scheduler_edit_refuses_a_hostile_zone_with_a_message(client, stored, tz):
    token = token_for(user_with("admin"))
    url = reverse("api_queue_action", args=[*stored.args("q"), "edit-scheduler"])
    body = {"id": "calm", "name": "calm-job", "pattern": "0 3 * * *", "tz": tz}
    response = client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400, response.content
    assert "time zone" in response.json()["message"] and len(response.json()["message"]) < 300
    assert stored.client.hget(f"{stored.prefix}:q:repeat:calm", "every") == b"60000"
    # The refusal is audited whatever the zone holds (PostgreSQL stores no NUL: it is replaced).
    refused = AuditEntry.objects.get(action="refused.validation")
    assert "time zone" in refused.message and "\x00" not in refused.message + json.dumps(refused.message_data)
    if "\x00" in tz:
        assert "\ufffd" in refused.message
    client.force_login(user_with("operator"))
    assert client.get(reverse("scheduler_edit", args=[*stored.args("q"), "far"])).status_code == 200
