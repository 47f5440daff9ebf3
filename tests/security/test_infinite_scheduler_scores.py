"""A producer can score a scheduler ``inf`` or ``-inf`` (``ZADD <prefix>:<queue>:repeat inf <id>``;
Redis refuses ``nan``). That used to raise wherever the score became a next run: 500s on the
schedulers pages, the health page and the queue API, and every health check failed with it.
Now the hostile scheduler shows as unreadable and costs only its own row."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.health import checks as health_checks

pytestmark = pytest.mark.django_db

HOSTILE = {"sky-high": float("inf"), "deep-past": float("-inf")}


@pytest.fixture
def evil(prefixed_queues):
    """Queue ``evil`` with two schedulers scored ``inf`` / ``-inf`` and one ordinary one, and an
    ordinary queue ``other``."""
    r, p = prefixed_queues.client, prefixed_queues.prefix
    r.hset(f"{p}:evil:meta", mapping={"opts.maxLenEvents": 10000})
    for sid, score in {**HOSTILE, "calm": 1_700_000_000_000}.items():
        r.hset(f"{p}:evil:repeat:{sid}", mapping={"name": f"job-{sid}", "every": 60000, "ic": 1})
        r.zadd(f"{p}:evil:repeat", {sid: score})
    # An interval no float holds: read as an integer, it broke the duration shown for it.
    r.hset(f"{p}:evil:repeat:vast", mapping={"name": "job-vast", "every": "1" + "0" * 400, "ic": 1})
    r.zadd(f"{p}:evil:repeat", {"vast": 1_700_000_000_000})
    r.hset(f"{p}:other:meta", mapping={"opts.maxLenEvents": 10000})
    r.rpush(f"{p}:other:wait", "j1")
    return prefixed_queues


def _strict(content: bytes):
    return json.loads(content, parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c}"))


@pytest.mark.parametrize("page", ["schedulers", "queue_schedulers"])
def test_schedulers_pages_show_an_infinitely_scored_scheduler_as_unreadable(logged_in, evil, page):
    url = reverse(page, args=evil.args("evil")) if page == "queue_schedulers" else reverse(page)
    response = logged_in.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    assert all(f"job-{sid}" in body for sid in ("calm", "sky-high", "deep-past", "vast"))
    assert body.count('class="badge unreadable"') == 3


def test_queue_api_lists_it_in_strict_json_with_its_next_run_unreadable(logged_in, evil):
    response = logged_in.get(reverse("api_queue", args=evil.args("evil")))
    assert response.status_code == 200
    listed = {s["id"]: s for s in _strict(response.content)["schedulers_list"]}
    assert listed["calm"]["next_run"] == 1_700_000_000_000 and listed["calm"]["unreadable"] == []
    for sid in HOSTILE:
        assert listed[sid]["next_run"] is None and listed[sid]["unreadable"] == ["next_run"]
    assert listed["vast"]["every"] is None and listed["vast"]["unreadable"] == ["every"]


def test_health_checks_of_every_queue_still_run(logged_in, evil):
    assert logged_in.get(reverse("health")).status_code == 200
    report = health_checks.run_all()
    (connection,) = report.connections
    legacy = [r for r in connection.results if r.kind == "queue.legacy_repeat"]
    assert {r.queue for r in legacy} >= {"evil"}
    assert all(r.status == "pass" for r in legacy)


def test_editing_an_infinitely_scored_zone_less_cron_scheduler_works(client, prefixed_queues):
    """Its score is the evidence of the workers' zone: an unreadable one is no evidence."""
    from tests.support.accounts import user_with

    r, p = prefixed_queues.client, prefixed_queues.prefix
    r.hset(f"{p}:evil:meta", mapping={"opts.maxLenEvents": 10000})
    r.hset(f"{p}:evil:repeat:nightly", mapping={"name": "report", "pattern": "0 3 * * *", "ic": 1})
    r.zadd(f"{p}:evil:repeat", {"nightly": float("inf")})
    client.force_login(user_with("operator"))
    q = prefixed_queues.args("evil")
    assert client.get(reverse("scheduler_edit", args=[*q, "nightly"])).status_code == 200
    done = client.post(
        reverse("queue_action", args=[*q, "edit-scheduler"]),
        {"id": "nightly", "name": "report", "pattern": "30 2 * * *", "data": "{}"},
        HTTP_HX_REQUEST="true",
    )
    assert done.status_code == 200 and b'class="action-result ok"' in done.content, done.content
    assert r.hget(f"{p}:evil:repeat:nightly", "pattern") == b"30 2 * * *"


def test_migrating_an_infinitely_scored_legacy_entry_is_refused_with_a_message(client, prefixed_queues):
    from tests.support.accounts import user_with

    r, p = prefixed_queues.client, prefixed_queues.prefix
    member = "report::::0 3 * * *"
    r.hset(f"{p}:evil:meta", mapping={"opts.maxLenEvents": 10000})
    r.zadd(f"{p}:evil:repeat", {member: float("-inf")})
    client.force_login(user_with("operator"))
    preview = client.get(reverse("migrate_repeat", args=prefixed_queues.args("evil")), {"member": member})
    assert preview.status_code == 200
    assert "no next run Queuewatch can read" in preview.content.decode()
