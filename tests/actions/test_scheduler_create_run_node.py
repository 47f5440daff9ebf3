"""Creating a job scheduler and running one now, through the pages, against real Node BullMQ 6.7
workers in New York (``TZ=America/New_York``): a created scheduler is the one Node's own
``upsertJobScheduler`` makes (a zone-less pattern in the workers' inferred zone), it fires and
a Node worker runs its jobs with the template's options; "run now" adds a one-off job, as
``Queue.add`` would, that the worker runs, and the scheduler's next run does not move. Dates are
typed in a zone; the API lists the scheduler as finished once its limit is reached."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from tests.support.accounts import user_with
from tests.support.redis_db import point_at
from tests.support.scheduler_pages import NEW_YORK, QUEUE, save_unchanged, schedule, score
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


def ms(text: str) -> int:
    return round(dt.datetime.fromisoformat(text).timestamp() * 1000)


def post(client, prefixed, action: str, fields: dict):
    return client.post(reverse("queue_action", args=[*prefixed.args(QUEUE), action]), fields, HTTP_HX_REQUEST="true")


def _decoded(h: dict) -> dict:
    return {k.decode(): (json.loads(v) if k in (b"opts", b"data") else v.decode()) for k, v in h.items()}


def test_a_created_zone_less_pattern_is_what_nodes_upsert_makes_in_the_workers_zone(client, settings, redis_prefix):
    # Node's workers (and producers) are in New York; one zone-less scheduler tells their zone.
    template = {"name": "report", "data": {"to": "ops"}, "opts": {"attempts": 3, "keepLogs": 7}}
    schedule(redis_prefix, "node-made", {"pattern": "0 3 * * *"}, template)
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("operator"))
    form = client.get(reverse("scheduler_create", args=redis_prefix.args(QUEUE))).content.decode()
    assert "America/New_York" in form and 'data-zone-source="inferred"' in form
    done = post(
        client,
        redis_prefix,
        "create-scheduler",
        {
            "id": "ours",
            "name": "report",
            "pattern": "0 3 * * *",
            "tz": "",
            "dates_tz": "America/New_York",
            "data": '{"to": "ops"}',
            "opts": '{"attempts": 3, "keepLogs": 7}',
        },
    )
    assert b'class="action-result ok"' in done.content, done.content
    assert score(redis_prefix, "ours") == score(redis_prefix, "node-made")  # 03:00 New York, not UTC
    key = redis_prefix.queue(QUEUE).key("repeat:")
    assert _decoded(redis_prefix.client.hgetall(key + "ours")) == _decoded(
        redis_prefix.client.hgetall(key + "node-made")
    )
    ours = redis_prefix.client.hgetall(redis_prefix.queue(QUEUE).job_key(f"repeat:ours:{score(redis_prefix, 'ours')}"))
    theirs = redis_prefix.client.hgetall(
        redis_prefix.queue(QUEUE).job_key(f"repeat:node-made:{score(redis_prefix, 'node-made')}")
    )
    strip = ("timestamp", "delay", "jobId", "repeatJobKey")
    assert {k: v for k, v in json.loads(ours[b"opts"]).items() if k not in strip} == {
        k: v for k, v in json.loads(theirs[b"opts"]).items() if k not in strip
    }
    # A second create over the same id is refused and changes nothing.
    before = redis_prefix.client.hgetall(key + "ours")
    again = post(client, redis_prefix, "create-scheduler", {"id": "ours", "name": "x", "every": "1000"})
    assert b"already" in again.content and redis_prefix.client.hgetall(key + "ours") == before
    entry = AuditEntry.objects.get(action="queue.create-scheduler", outcome=AuditEntry.OK)
    assert json.loads(entry.selection["change"]["after"])["pattern"] == "0 3 * * *"
    # The edit form's preview reads the zone-less pattern in the workers' zone, as the save will.
    edit = client.get(reverse("scheduler_edit", args=[*redis_prefix.args(QUEUE), "node-made"])).content.decode()
    assert reverse("scheduler_preview", args=redis_prefix.args(QUEUE)) in edit and 'name="prev_next"' in edit
    shown = client.get(
        reverse("scheduler_preview", args=redis_prefix.args(QUEUE)),
        {"id": "node-made", "name": "report", "pattern": "0 3 * * *", "prev_next": score(redis_prefix, "node-made")},
    ).content.decode()
    assert shown.count("03:00:00 America/New_York") == 5 and 'data-zone-source="inferred"' in shown


def test_a_created_scheduler_fires_and_run_now_adds_a_one_off_the_node_worker_runs(client, settings, redis_prefix):
    point_at(settings, redis_prefix.spec())
    redis_prefix.client.hset(redis_prefix.queue(QUEUE).key("meta"), "opts.maxLenEvents", 10000)
    client.force_login(user_with("operator"))
    end = dt.datetime.now(ZoneInfo("America/New_York")).replace(microsecond=0) + dt.timedelta(hours=2)
    opts = {"attempts": 2, "keepLogs": 5, "priority": 3, "backoff": {"type": "fixed", "delay": 10}}
    done = post(
        client,
        redis_prefix,
        "create-scheduler",
        {
            "id": "ticker",
            "name": "tick",
            "every": "1000",
            "limit": "3",
            "endDate_at": end.strftime("%Y-%m-%dT%H:%M:%S"),
            "dates_tz": "America/New_York",
            "data": '{"n": 1}',
            "opts": json.dumps(opts),
        },
    )
    assert b'class="action-result ok"' in done.content, done.content
    stored = redis_prefix.client.hgetall(redis_prefix.queue(QUEUE).key("repeat:ticker"))
    assert int(stored[b"endDate"]) == int(end.timestamp() * 1000)  # typed in New York's time
    due, iterations = score(redis_prefix, "ticker"), stored[b"ic"]

    page = client.get(reverse("scheduler_detail", args=[*redis_prefix.args(QUEUE), "ticker"])).content.decode()
    assert f"repeat:ticker:{due}" in page and "queue-run-scheduler" in page and "keepLogs" in page
    ran = post(client, redis_prefix, "run-scheduler", {"id": "ticker"})
    assert b'class="action-result ok"' in ran.content, ran.content
    entry = AuditEntry.objects.get(action="queue.run-scheduler", outcome=AuditEntry.OK)
    assert entry.selection["scheduler"] == "ticker" and entry.affected == 1, entry.selection
    # The scheduler did not move: same next run, same pending iteration, same count.
    assert score(redis_prefix, "ticker") == due
    assert redis_prefix.client.hget(redis_prefix.queue(QUEUE).key("repeat:ticker"), "ic") == iterations
    assert redis_prefix.client.exists(redis_prefix.queue(QUEUE).job_key(f"repeat:ticker:{due}"))

    # A Node worker in New York runs the one-off and the scheduler's three iterations.
    worked = run_node(
        "toolbox.mjs", "run", redis_prefix.url, QUEUE, "4", "0", prefix=redis_prefix.prefix, env=NEW_YORK, timeout=60
    )
    jobs = worked["jobs"]
    iterations_run = sorted(i for i in jobs if i.startswith("repeat:ticker:"))
    plain = [i for i in jobs if not i.startswith("repeat:")]
    assert len(iterations_run) == 3 and len(plain) == 1, jobs
    for job in jobs.values():
        assert job["name"] == "tick" and job["data"] == {"n": 1} and job["state"] == "completed"
        for name, value in opts.items():
            assert job["opts"][name] == value, (name, job["opts"])
    assert "repeatJobKey" not in jobs[plain[0]]["opts"] and "repeat" not in jobs[plain[0]]["opts"]

    # Its limit reached, the API lists it finished, with no next run; its page links the last run.
    body = client.get(reverse("api_queue", args=redis_prefix.args(QUEUE))).json()
    (listed,) = [s for s in body["schedulers_list"] if s["id"] == "ticker"]
    assert listed["finished"] is True and listed["next_run"] is None
    page = client.get(reverse("scheduler_detail", args=[*redis_prefix.args(QUEUE), "ticker"])).content.decode()
    assert iterations_run[-1] in page and "scheduler-last-run" in page
    one = client.get(reverse("api_scheduler", args=[*redis_prefix.args(QUEUE), "ticker"])).json()
    assert one["finished"] and one["pending"] is None and one["iterations"] == 3
    assert one["last_run"] == {
        "job_id": iterations_run[-1],
        "due": int(iterations_run[-1].rsplit(":", 1)[1]),
        "state": "completed",
    }
    # An iteration's job page links back to its scheduler.
    job_page = client.get(reverse("job", args=[*redis_prefix.args(QUEUE), iterations_run[-1]])).content.decode()
    assert reverse("scheduler_detail", args=[*redis_prefix.args(QUEUE), "ticker"]) in job_page


def test_run_now_stores_the_job_nodes_queue_add_stores(client, settings, redis_prefix):
    template = {
        "name": "report",
        "data": {"to": "ops"},
        "opts": {"attempts": 3, "keepLogs": 7, "removeOnComplete": 10, "telemetry": {"omitContext": True}},
    }
    schedule(redis_prefix, "nightly", {"pattern": "0 3 * * *", "tz": "Europe/Paris"}, template)
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("operator"))
    due = score(redis_prefix, "nightly")
    ran = post(client, redis_prefix, "run-scheduler", {"id": "nightly"})
    assert b'class="action-result ok"' in ran.content, ran.content
    assert score(redis_prefix, "nightly") == due
    waiting = [j.decode() for j in redis_prefix.client.lrange(redis_prefix.queue(QUEUE).key("wait"), 0, -1)]
    (ours,) = waiting
    theirs = run_node(
        "toolbox.mjs",
        "add",
        redis_prefix.url,
        "node-q",
        json.dumps([template]),
        prefix=redis_prefix.prefix,
    )["hashes"]
    (node_job,) = theirs.values()
    our_job = {
        k.decode(): v.decode() for k, v in redis_prefix.client.hgetall(redis_prefix.queue(QUEUE).job_key(ours)).items()
    }
    assert set(our_job) == set(node_job)
    for field in ("name", "data", "priority", "delay", "atm" if "atm" in node_job else "name"):
        assert our_job[field] == node_job[field], field
    assert json.loads(our_job["opts"]) == json.loads(node_job["opts"])


def test_the_edit_form_shows_dates_in_the_schedulers_zone_and_an_unchanged_save_keeps_them(
    client, settings, redis_prefix
):
    start, end = ms("2031-06-01T06:30:00.123+00:00"), ms("2032-01-01T00:00:00+00:00")
    repeat = {"pattern": "0 3 * * *", "tz": "Europe/Paris", "startDate": start, "endDate": end}
    schedule(redis_prefix, "paris", repeat)
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("operator"))
    before = redis_prefix.client.hgetall(redis_prefix.queue(QUEUE).key("repeat:paris"))
    page = save_unchanged(client, redis_prefix, "paris")
    # 06:30 UTC is 08:30 in Paris in June (summer time); milliseconds kept.
    assert 'value="2031-06-01T08:30:00.123"' in page and 'name="dates_tz" value="Europe/Paris"' in page
    after = redis_prefix.client.hgetall(redis_prefix.queue(QUEUE).key("repeat:paris"))
    assert (
        (after[b"startDate"], after[b"endDate"])
        == (before[b"startDate"], before[b"endDate"])
        == (
            str(start).encode(),
            str(end).encode(),
        )
    )
