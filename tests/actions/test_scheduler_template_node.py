"""Schedulers real Node BullMQ 6.7 made with every template option it takes, an interval
``offset`` or ``immediately``, edited through the page and the API; and legacy v5 repeatables
whose limit, start date, offset and template options survive the migration."""

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from tests.support.accounts import token_for, user_with
from tests.support.redis_db import point_at
from tests.support.scheduler_pages import QUEUE, save_unchanged, schedule, score
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]

FULL_TEMPLATE = {
    "attempts": 2,
    "keepLogs": 5,
    "stackTraceLimit": 3,
    "sizeLimit": 100000,
    "removeDependencyOnFailure": True,
    "telemetry": {"metadata": "trace-1", "omitContext": True},
    "removeOnComplete": {"count": 10},
}


def node_schedulers(prefixed) -> dict:
    listed = run_node("toolbox.mjs", "schedulers", prefixed.url, QUEUE, prefix=prefixed.prefix)["schedulers"]
    return {s["key"]: s for s in listed}


def api(client, prefixed, body: dict):
    url = reverse("api_queue_action", args=[*prefixed.args(QUEUE), "edit-scheduler"])
    token = token_for(user_with("operator", username=f"api-{time.monotonic_ns()}"))
    return client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_scheduler_with_any_template_option_saves_unchanged(client, settings, redis_prefix):
    schedule(redis_prefix, "full", {"every": 3_600_000}, {"name": "report", "data": {}, "opts": FULL_TEMPLATE}, env={})
    point_at(settings, redis_prefix.spec())
    key = redis_prefix.queue(QUEUE).key("repeat:") + "full"
    before = json.loads(redis_prefix.client.hget(key, "opts"))
    client.force_login(user_with("operator"))
    page = save_unchanged(client, redis_prefix, "full")
    assert "keepLogs" in page and "sizeLimit" in page
    assert json.loads(redis_prefix.client.hget(key, "opts")) == before
    assert node_schedulers(redis_prefix)["full"]["template"]["opts"] == FULL_TEMPLATE
    refused = api(client, redis_prefix, {"id": "full", "name": "r", "every": 1000, "opts": {"jobId": "x"}})
    assert refused.status_code == 400 and "jobId" in refused.json()["message"]
    both = {"failParentOnFailure": True, "continueParentOnFailure": True}
    refused = api(client, redis_prefix, {"id": "full", "name": "r", "every": 1000, "opts": both})
    assert refused.status_code == 400 and "cannot be used together" in refused.json()["message"]


def test_changing_every_keeps_the_offset_phase_as_nodes_upsert_does(client, settings, redis_prefix):
    for sid in ("theirs", "ours"):
        schedule(redis_prefix, sid, {"every": 60_000, "offset": 7_000}, env={})
    point_at(settings, redis_prefix.spec())
    assert score(redis_prefix, "ours") % 60_000 == 7_000
    client.force_login(user_with("operator"))
    page = save_unchanged(client, redis_prefix, "ours", every="120000")
    assert 'name="offset" value="7000"' in page
    schedule(redis_prefix, "theirs", {"every": 120_000, "offset": 7_000}, env={})
    assert score(redis_prefix, "theirs") % 120_000 == score(redis_prefix, "ours") % 120_000 == 7_000
    listed = node_schedulers(redis_prefix)
    assert listed["ours"]["offset"] == listed["theirs"]["offset"] == 7_000
    # An offset with a cron pattern is something BullMQ drops silently: refused here.
    refused = api(client, redis_prefix, {"id": "ours", "name": "r", "pattern": "0 3 * * *", "offset": 5})
    assert refused.status_code == 400 and "offset" in refused.json()["message"]


def test_immediately_runs_a_pattern_now_and_is_refused_where_bullmq_ignores_or_refuses_it(
    client, settings, redis_prefix
):
    schedule(redis_prefix, "nightly", {"pattern": "0 3 * * *", "tz": "UTC"}, env={})
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("operator"))
    before = int(time.time() * 1000)
    ok = api(client, redis_prefix, {"id": "nightly", "name": "r", "pattern": "0 3 * * *", "immediately": True})
    assert ok.status_code == 200 and ok.json()["outcome"] == "done", ok.content
    now_run = score(redis_prefix, "nightly")
    assert before <= now_run <= int(time.time() * 1000)
    waiting = redis_prefix.client.lrange(redis_prefix.queue(QUEUE).key("wait"), 0, -1)
    assert waiting == [f"repeat:nightly:{now_run}".encode()]
    assert "immediately" not in redis_prefix.client.hgetall(redis_prefix.queue(QUEUE).key("repeat:") + "nightly")
    for body, words in (
        ({"every": 1000, "immediately": True}, "'immediately' applies to a cron pattern only"),
        ({"pattern": "0 3 * * *", "immediately": True, "startDate": before + 10**7}, "startDate"),
    ):
        refused = api(client, redis_prefix, {"id": "nightly", "name": "r", **body})
        assert refused.status_code == 400 and words in refused.json()["message"], refused.content


def _legacy_v5(prefixed, member: str, *, repeat: dict, opts: dict, due: int, hash_fields: dict) -> str:
    """A v5 hashed repeatable as 5.x wrote it (its hash holds no limit, startDate or offset:
    those live in its pending iteration's ``repeat``), with that pending iteration."""
    queue = prefixed.queue(QUEUE)
    prefixed.client.zadd(queue.key("repeat"), {member: due})
    prefixed.client.hset(queue.key("repeat:") + member, mapping={"name": "legacy", **hash_fields})
    job_id = f"repeat:{member}:{due}"
    stored = {**opts, "repeat": repeat, "jobId": job_id, "delay": 1000, "timestamp": due - 1000, "prevMillis": due}
    prefixed.client.hset(
        queue.job_key(job_id),
        mapping={
            "name": "legacy",
            "data": json.dumps({"v": 5}),
            "timestamp": str(due - 1000),
            "delay": "1000",
            "priority": "0",
            "rjk": member,
            "opts": json.dumps({**stored, "repeatJobKey": member}),
        },
    )
    prefixed.client.zadd(queue.key("delayed"), {job_id: due * 0x1000})
    prefixed.client.hset(queue.key("meta"), "opts.maxLenEvents", 10000)
    return job_id


def migrate(client, prefixed, member: str, scheduler_id: str):
    args = prefixed.args(QUEUE)
    page = client.get(reverse("migrate_repeat", args=args), {"member": member, "id": scheduler_id}).content.decode()
    done = client.post(
        reverse("queue_action", args=[*args, "migrate-repeat"]),
        {"member": member, "id": scheduler_id, "reason": "v6"},
        HTTP_HX_REQUEST="true",
    )
    assert b'class="action-result ok"' in done.content, done.content
    return page


def test_a_migration_keeps_limit_start_date_and_every_template_option(client, settings, redis_prefix):
    now = int(time.time() * 1000)
    start = now + 30 * 86_400_000
    pattern_due = now + 3_600_000
    _legacy_v5(
        redis_prefix,
        "a1b2c3",
        repeat={"pattern": "0 3 * * *", "tz": "Europe/Paris", "limit": 10, "count": 4, "startDate": start},
        opts={"attempts": 2, "kl": 5, "stackTraceLimit": 3, "tm": "trace-1", "omc": True, "rdof": True},
        due=pattern_due,
        hash_fields={"pattern": "0 3 * * *", "tz": "Europe/Paris"},
    )
    every_due = (now // 60_000 + 2) * 60_000
    _legacy_v5(
        redis_prefix,
        "d4e5f6",
        repeat={"every": 60_000, "offset": 5_000, "count": 1},
        opts={"attempts": 1},
        due=every_due,
        hash_fields={"every": "60000"},
    )
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("operator"))
    page = migrate(client, redis_prefix, "a1b2c3", "nightly")
    assert 'class="migration-limit">7' in page  # 10, less the 3 runs already made
    migrate(client, redis_prefix, "d4e5f6", "minutely")
    listed = node_schedulers(redis_prefix)
    nightly, minutely = listed["nightly"], listed["minutely"]
    assert (nightly["limit"], nightly["startDate"], nightly["tz"]) == (7, start, "Europe/Paris")
    assert nightly["template"]["opts"] == {
        "attempts": 2,
        "keepLogs": 5,
        "stackTraceLimit": 3,
        "removeDependencyOnFailure": True,
        "telemetry": {"metadata": "trace-1", "omitContext": True},
    }
    assert nightly["next"] >= start  # not before its start date
    # The interval keeps its phase: first when the legacy run (with its offset) is due, offset kept.
    assert minutely["next"] == every_due + 5_000 and minutely["offset"] == 5_000


def test_a_legacy_option_no_template_can_hold_is_refused_not_dropped(client, settings, redis_prefix):
    now = int(time.time() * 1000)
    _legacy_v5(
        redis_prefix,
        "0a0b0c",
        repeat={"every": 60_000, "count": 1},
        opts={"de": {"id": "once"}},
        due=(now // 60_000 + 2) * 60_000,
        hash_fields={"every": "60000"},
    )
    point_at(settings, redis_prefix.spec())
    client.force_login(user_with("operator"))
    args = redis_prefix.args(QUEUE)
    page = client.get(reverse("migrate_repeat", args=args), {"member": "0a0b0c"}).content.decode()
    assert "deduplication" in page and "Migrate it by hand" in page
    assert redis_prefix.client.zscore(redis_prefix.queue(QUEUE).key("repeat"), "0a0b0c") is not None
