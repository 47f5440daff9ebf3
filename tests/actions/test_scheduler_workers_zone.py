"""A cron pattern without ``tz`` runs in the Node workers' local zone (cron-parser without a
zone), here New York (Node run with ``TZ=America/New_York``). Queuewatch takes that zone from
the connection's configuration, or infers it from the stored next run (and says so): the edit
form saved unchanged keeps the next run, the pages show the zone, and the missed-run alert
counts runs in it. Real Node BullMQ 6.7 writes the schedulers."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from queues.alert_kinds.base import Target
from queues.alert_kinds.scheduler_kinds import SchedulerMissed, missed_runs
from queues.connections import connection_specs_from_env
from queues.errors import ConfigurationError
from queues.sources import ConnectionSpec
from tests.support.accounts import user_with
from tests.support.redis_db import point_at
from tests.support.scheduler_pages import QUEUE, save_unchanged, schedule, score
from tests.support.servers import node_available

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


def test_unchanged_save_keeps_the_next_run_of_a_pattern_in_the_inferred_workers_zone(client, settings, redis_prefix):
    made = schedule(redis_prefix, "morning", {"pattern": "0 3 * * *"})
    point_at(settings, redis_prefix.spec())
    due = score(redis_prefix, "morning")
    assert made["next"]["id"] == f"repeat:morning:{due}"
    local = dt.datetime.fromtimestamp(due / 1000, dt.UTC).astimezone(dt.timezone(dt.timedelta(hours=-5)))
    assert local.hour in (3, 4)  # 03:00 in New York (EST or EDT), not 03:00 UTC
    client.force_login(user_with("operator"))
    page = save_unchanged(client, redis_prefix, "morning")
    assert score(redis_prefix, "morning") == due  # read as UTC, it moved to 03:00Z the next day
    assert "America/New_York" in page and 'data-zone-source="inferred"' in page
    assert redis_prefix.client.zrange(redis_prefix.queue(QUEUE).key("delayed"), 0, -1) == [
        f"repeat:morning:{due}".encode()
    ]
    listing = client.get(reverse("queue_schedulers", args=redis_prefix.args(QUEUE))).content.decode()
    row = listing[listing.index("<code>morning</code>") :].split("</tr>", 1)[0]
    assert "America/New_York" in row and 'data-zone-source="inferred"' in row


def test_a_configured_zone_is_used_and_shown_and_the_missed_alert_counts_in_it(client, settings, redis_prefix):
    schedule(redis_prefix, "morning", {"pattern": "0 3 * * *"})
    schedule(redis_prefix, "paris", {"pattern": "0 3 * * *", "tz": "Europe/Paris"})
    due = score(redis_prefix, "morning")
    spec = ConnectionSpec("default", redis_prefix.url, (redis_prefix.prefix,), cron_tz="America/New_York")
    point_at(settings, spec)
    client.force_login(user_with("operator"))
    page = save_unchanged(client, redis_prefix, "morning")
    assert 'data-zone-source="configured"' in page and score(redis_prefix, "morning") == due

    from dashboard.connections.registry import get_registry

    listed = {s.id: s for s in get_registry().schedulers("default").list(redis_prefix.queue(QUEUE))}
    assert (listed["morning"].zone.name, listed["morning"].zone.source) == ("America/New_York", "configured")
    assert (listed["paris"].zone.name, listed["paris"].zone.source) == ("Europe/Paris", "own")
    # 20 hours after a missed 03:00 New York run, the next one (24 hours later) is not due yet;
    # read in UTC, "03:00" would have come round again 19 hours after it.
    now = dt.datetime.fromtimestamp(due / 1000, dt.UTC) + dt.timedelta(hours=20)
    assert missed_runs(listed["morning"], now=now, grace=dt.timedelta(0))[1] == 1
    observed = SchedulerMissed._observe_one(
        listed["morning"], Target("default", redis_prefix.prefix, QUEUE, "morning"), now, dt.timedelta(0)
    )
    assert observed.above and "1 run not taken" in observed.summary and "America/New_York" in observed.summary


def test_the_workers_zone_is_read_from_the_environment():
    env = {"QUEUEWATCH_URL_DEFAULT": "redis://127.0.0.1:1/0", "QUEUEWATCH_CONNECTIONS": "eu"}
    env["QUEUEWATCH_URL_EU"] = "redis://127.0.0.1:1/1"
    specs = connection_specs_from_env({**env, "QUEUEWATCH_CRON_TZ": "America/New_York"}, None)
    assert [s.cron_tz for s in specs] == ["America/New_York", "America/New_York"]
    specs = connection_specs_from_env({**env, "QUEUEWATCH_CRON_TZ_EU": "Europe/Paris"}, None)
    assert [s.cron_tz for s in specs] == ["", "Europe/Paris"]
    with pytest.raises(ConfigurationError, match="QUEUEWATCH_CRON_TZ_EU"):
        connection_specs_from_env({**env, "QUEUEWATCH_CRON_TZ_EU": "Mars/Base"}, None)


def test_nothing_to_infer_from_is_said_to_be_an_assumption(client, settings, redis_prefix):
    # ``immediately``: the stored next run is the time of the call, a run of the pattern in no zone.
    schedule(redis_prefix, "asap", {"pattern": "17 3 * * *", "immediately": True})
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("viewer"))
    listing = client.get(reverse("queue_schedulers", args=redis_prefix.args(QUEUE))).content.decode()
    row = listing[listing.index("<code>asap</code>") :].split("</tr>", 1)[0]
    assert "UTC" in row and 'data-zone-source="assumed"' in row
