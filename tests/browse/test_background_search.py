"""Background searches by data: started from the "Find by data" page or the API, run by the
monitor in bounded, paced steps with nobody watching, surviving a monitor that stops half-way
or is killed (the next one takes the lease and goes on from the saved offset), cancelled on request, and seen
only by their owner. The failed jobs are made by real Node BullMQ."""
# Literal `bull:` keys kept: the monitor runs the searches on a whole test database.

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.accounts.models import QueueGrant
from dashboard.browse import search_tasks
from dashboard.browse.models import SearchTask
from dashboard.core.db import db_retry
from queues.keys import QueueRef
from tests.support.accounts import token_for, user_with
from tests.support.live import monitor_thread
from tests.support.seeding import seed_failed
from tests.support.servers import run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]

ARGS = ["default", "bull", "big"]


def seed(url: str, failed: int) -> dict:
    """``failed`` jobs with data ``{"i": n}``, failed by a Node worker."""
    return run_node("seed_actions.mjs", url, "big", str(failed), "0", "0", "work", "boom")


def exists(client) -> None:
    """The queue, with a few failed jobs (no Node needed where nothing runs)."""
    queue = QueueRef(*ARGS)
    client.hset(queue.key("meta"), mapping={"opts.maxLenEvents": 10000})
    seed_failed(client, queue, 3)


def row(pk: int) -> SearchTask:
    return db_retry(lambda: SearchTask.objects.get(pk=pk))


@pytest.fixture
def small_steps(settings):
    settings.QUEUEWATCH_SCAN_SAMPLE = 100
    settings.QUEUEWATCH_SEARCH_PACE_MS = 20


def test_a_search_started_on_the_page_finishes_with_the_page_closed(live_setup, redis_url, client, small_steps):
    made = seed(redis_url, 450)
    owner = user_with(None, username="finder")
    client.force_login(owner)
    find = client.get(reverse("queue_find", args=ARGS), {"state": "failed", "where": "i = 123"}).content.decode()
    assert 'class="search-background"' in find  # a state bigger than one step offers it
    started = client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 123"})
    assert started.status_code == 302
    pk = SearchTask.objects.get().pk
    assert started["Location"] == reverse("search", args=[pk])
    page = client.get(started["Location"]).content.decode()
    assert 'hx-trigger="every 2s"' in page and "i = 123" in page
    client.logout()  # nobody watches from here on

    with monitor_thread(tick=0.3, name="search-monitor", lock_ttl_ms=2000):
        wait_for(lambda: row(pk).state == SearchTask.DONE, timeout=60)
    done = row(pk)
    assert (done.examined, done.in_state, done.steps, done.too_large) == (450, 450, 5, 0)  # 100 per step
    assert [m["id"] for m in done.matches] == [made["failed"][123]]
    assert done.matches[0]["failedReason"] == "boom 123"

    client.force_login(owner)
    page = client.get(reverse("search", args=[pk])).content.decode()
    assert 'data-status="done"' in page and "every 2s" not in page
    assert reverse("job", args=[*ARGS, made["failed"][123]]) in page
    listed = client.get(reverse("searches")).content.decode()
    assert f'data-search-id="{pk}"' in listed
    # Coming back to the queue's find page shows it too.
    again = client.get(reverse("queue_find", args=ARGS)).content.decode()
    assert 'class="background-searches"' in again and f'data-search-id="{pk}"' in again
    api = client.get(reverse("api_search", args=[pk])).json()
    assert api["status"] == "done" and api["examined"] == 450 and api["jobs"][0]["url"].endswith(made["failed"][123])


def test_a_search_survives_its_monitor_stopping_and_finishes_once(live_setup, redis_url, small_steps, settings):
    made = seed(redis_url, 400)
    settings.QUEUEWATCH_SEARCH_PACE_MS = 400
    token = token_for(user_with(None, username="api-finder"))
    answer = _post(reverse("api_search_start", args=ARGS), token, state="failed", where="i = 7")
    assert answer.status_code == 201, answer.content
    pk = answer.json()["id"]
    with monitor_thread(tick=0.3, name="first-monitor", lock_ttl_ms=2000):
        wait_for(lambda: row(pk).steps >= 1, timeout=30)
    half = row(pk)
    assert half.state == SearchTask.RUNNING and 0 < half.examined < 400  # left with its lease released
    settings.QUEUEWATCH_SEARCH_PACE_MS = 20
    with monitor_thread(tick=0.3, name="second-monitor", lock_ttl_ms=2000):
        wait_for(lambda: row(pk).state == SearchTask.DONE, timeout=60)
    done = row(pk)
    assert done.examined == 400 and done.steps == 4
    assert [m["id"] for m in done.matches] == [made["failed"][7]]  # found once, not once per monitor


def test_a_search_left_by_a_killed_monitor_is_taken_over_and_resumed_from_its_offset(
    live_setup, redis_url, small_steps
):
    import datetime as dt

    from django.utils import timezone

    seed(redis_url, 400)
    # As a SIGKILLed monitor leaves it: running, claimed by a process that no longer beats,
    # half-way through with its offset and step count saved.
    task = SearchTask.objects.create(
        created_by=user_with(None, username="orphan"),
        connection="default",
        prefix="bull",
        queue="big",
        job_state="failed",
        where="i = 9999",
        state=SearchTask.RUNNING,
        claimed_by="killed-monitor:0000",
        heartbeat_at=timezone.now() - dt.timedelta(minutes=1),
        started_at=timezone.now() - dt.timedelta(minutes=2),
        offset=200,
        examined=200,
        in_state=400,
        steps=2,
    )
    with monitor_thread(tick=0.3, name="heir-monitor", lock_ttl_ms=2000):
        wait_for(lambda: row(task.pk).state == SearchTask.DONE, timeout=60)
    done = row(task.pk)
    # Two more steps of 100 from position 200, not four from the start.
    assert (done.examined, done.steps, done.claimed_by.startswith("heir-monitor:")) == (400, 4, True)


def test_cancel_stops_a_search_and_keeps_what_it_found(live_setup, redis_url, small_steps, settings):
    seed(redis_url, 400)
    settings.QUEUEWATCH_SEARCH_PACE_MS = 300
    token = token_for(user_with(None, username="canceller"))
    pk = _post(reverse("api_search_start", args=ARGS), token, state="failed", where="i = 1").json()["id"]
    with monitor_thread(tick=0.3, name="cancel-monitor", lock_ttl_ms=2000):
        wait_for(lambda: row(pk).steps >= 1, timeout=30)
        cancelled = _post(reverse("api_search_cancel", args=[pk]), token)
        assert cancelled.status_code == 200 and cancelled.json()["cancel_requested"] is True
        wait_for(lambda: row(pk).state == SearchTask.CANCELLED, timeout=20)
    stopped = row(pk)
    assert stopped.examined < 400 and stopped.finished_at is not None
    assert _post(reverse("api_search_cancel", args=[pk]), token).status_code == 409  # already over


def test_a_pending_search_cancelled_never_runs(live_setup, client, small_steps):
    exists(live_setup)
    owner = user_with(None, username="quick")
    client.force_login(owner)
    client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 1"})
    task = SearchTask.objects.get()
    assert client.post(reverse("search_cancel", args=[task.pk])).status_code == 302
    assert row(task.pk).state == SearchTask.CANCELLED


def test_only_the_owner_sees_or_cancels_a_search_and_grants_are_respected(live_setup, client, settings):
    exists(live_setup)
    owner = user_with(None, username="owner")
    other = user_with("admin", username="someone-else")
    client.force_login(owner)
    client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 1"})
    pk = SearchTask.objects.get().pk
    client.force_login(other)
    assert client.get(reverse("search", args=[pk])).status_code == 404
    assert client.post(reverse("search_cancel", args=[pk])).status_code == 404
    assert f'data-search-id="{pk}"' not in client.get(reverse("searches")).content.decode()
    token = token_for(other)
    assert _get(reverse("api_search", args=[pk]), token).status_code == 404
    assert _post(reverse("api_search_cancel", args=[pk]), token).status_code == 404
    assert _get(reverse("api_searches"), token).json()["searches"] == []
    assert row(pk).state == SearchTask.PENDING and not row(pk).cancel_requested

    # A user whose grants do not cover the queue can neither start a search on it nor see theirs there.
    scoped = user_with(None, username="scoped")
    QueueGrant.objects.create(user=scoped, role="operator", queue_glob="tenant-a-*")
    client.force_login(scoped)
    assert client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 1"}).status_code == 404
    assert _post(reverse("api_search_start", args=ARGS), token_for(scoped), where="i = 1").status_code == 404
    SearchTask.objects.filter(pk=pk).update(created_by=scoped)
    assert client.get(reverse("search", args=[pk])).status_code == 404

    # Pages and the API need a login.
    client.logout()
    assert client.get(reverse("searches")).status_code == 302
    assert _get(reverse("api_searches"), "").status_code == 401


def test_bad_queries_and_too_many_searches_are_refused(live_setup, client, settings, monkeypatch):
    exists(live_setup)
    monkeypatch.setattr(search_tasks, "KEPT_FINISHED", 2)
    settings.QUEUEWATCH_SEARCH_MAX_ACTIVE = 1
    client.force_login(user_with(None, username="busy"))
    bad = client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "cus_57e8"})
    assert bad.status_code == 400 and "customer.id = cus_57e8" in bad.content.decode()
    assert client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 1"}).status_code == 302
    again = client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 2"})
    assert again.status_code == 409 and "background search running" in again.content.decode()
    # A user's finished searches are kept up to a bound: the oldest go when a new one starts.
    for _ in range(4):
        SearchTask.objects.filter(state=SearchTask.PENDING).update(state=SearchTask.DONE)
        client.post(reverse("search_start", args=ARGS), {"state": "failed", "where": "i = 3"})
    assert SearchTask.objects.filter(state=SearchTask.DONE).count() == 2
    assert SearchTask.objects.filter(state=SearchTask.PENDING).count() == 1


def _client():
    from django.test import Client

    return Client()


def _post(url: str, token: str, **body):
    return _client().post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def _get(url: str, token: str):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return _client().get(url, **headers)
