"""Non-finite numbers (``1e400``, ``inf``, ``Infinity``) and JSON nested ~900 deep in a
job used to raise (500 on lists, job page, API; the monitor crash-looped). Now the field shows as
unreadable, the rest of the job and every other job render, and the monitor keeps serving."""
# Literal `bull:` keys kept: the monitor tests: a monitor discovers every queue of its database.

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from dashboard.live import channels as live
from queues.keys import QueueRef
from tests.support.hostile import monitor_log, seed_non_finite
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db

EVIL = ("default", "bull", "evil")  # the monitor tests' queue (whole database: the monitor discovers it)


def pages(queue):
    yield reverse("overview")
    for state in ("failed", "delayed", "waiting"):
        yield reverse("queue", args=queue) + f"?state={state}"
    yield reverse("api_jobs", args=queue) + "?state=failed"
    yield reverse("api_jobs", args=queue) + "?state=delayed"


def test_lists_job_page_and_api_render_with_the_field_unreadable(logged_in, prefixed_queues):
    seed_non_finite(prefixed_queues.client, prefix=prefixed_queues.prefix)
    queue = prefixed_queues.args("evil")
    for url in pages(queue):
        response = logged_in.get(url)
        assert response.status_code == 200, url
    listed = logged_in.get(reverse("queue", args=queue) + "?state=failed").content.decode()
    assert "ordinary" in listed and "hostile" in listed  # the other job renders, and so does this one

    page = logged_in.get(reverse("job", args=[*queue, "inf"]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Unreadable" in body and "finishedOn" in body and "timestamp" in body

    api = logged_in.get(reverse("api_job", args=[*queue, "inf"]))
    assert api.status_code == 200
    doc = json.loads(api.content, parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c}"))
    assert doc is not None
    assert logged_in.get(reverse("job", args=[*queue, "calm-1"])).status_code == 200


def _restarts(messages) -> list[str]:
    return [m for m in messages if "restarting the leader loop" in m]


def test_monitor_keeps_serving_every_other_queue(live_setup):
    """The attack: someone watches the hostile list and job page while the monitor runs."""
    with monitor_log() as messages:
        _watch_hostile_then_update_another_queue(live_setup)
    assert _restarts(messages) == []


def _watch_hostile_then_update_another_queue(live_setup):
    from tests.support.live import monitor_thread

    seed_non_finite(live_setup)
    evil = QueueRef(*EVIL)
    dash = dash_redis.dashboard_redis()
    for state in ("failed", "delayed"):
        dash_redis.watch(dash, dash_redis.Watch(dash_redis.Watch.LIST, QueueRef(*EVIL), state))
    dash_redis.watch(dash, dash_redis.Watch(dash_redis.Watch.JOB, QueueRef(*EVIL), "inf"))

    def rendered(group):
        return "".join(dash_redis.cached_fragments(dash, group))

    with monitor_thread(tick=0.5, name="test-monitor"):
        wait_for(lambda: "ordinary" in rendered(live.list_group(evil, "failed")))
        wait_for(lambda: "Unreadable" in rendered(live.job_group(evil, "inf")))
        # Another queue keeps updating after the hostile one was rendered.
        live_setup.hset("bull:other:meta", mapping={"opts.maxLenEvents": 10000})
        live_setup.rpush("bull:other:wait", *[f"j{i}" for i in range(3)])
        wait_for(lambda: _counts(dash, "other").get("waiting") == 3, timeout=30)


def _counts(dash, name: str) -> dict:
    state = state_store.read_state(dash) or {}
    return next((q["counts"] for q in state.get("queues", []) if q.get("name") == name), {})


def test_an_item_that_fails_to_render_costs_only_itself_and_is_logged_once(live_setup, monkeypatch):
    """Whatever else a hostile job finds to break, the monitor isolates each watched item."""
    from dashboard.live import fragments
    from tests.support.live import run_monitor_until

    real_job_live = fragments.job_live

    def job_live(job, **kwargs):
        if job.id == "boom":
            raise ValueError("a render that raises")
        return real_job_live(job, **kwargs)

    monkeypatch.setattr(fragments, "job_live", job_live)
    live_setup.hset("bull:evil:meta", mapping={"opts.maxLenEvents": 10000})
    for job_id in ("boom", "fine"):
        live_setup.hset(f"bull:evil:{job_id}", mapping={"name": job_id, "timestamp": 1700000000000})
        live_setup.rpush("bull:evil:wait", job_id)
    dash = dash_redis.dashboard_redis()
    dash_redis.watch(dash, dash_redis.Watch(dash_redis.Watch.JOB, QueueRef(*EVIL), "boom"))
    dash_redis.watch(dash, dash_redis.Watch(dash_redis.Watch.JOB, QueueRef(*EVIL), "fine"))
    evil = QueueRef(*EVIL)

    with monitor_log() as messages:
        run_monitor_until(
            lambda m: m.stats["ticks"] >= 4 and dash_redis.cached_fragments(dash, live.job_group(evil, "fine"))
        )
    failures = [m for m in messages if "cannot read or render" in m]
    assert len(failures) == 1 and "boom" in failures[0]
    assert _restarts(messages) == []
