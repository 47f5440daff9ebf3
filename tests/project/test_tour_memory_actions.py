"""The full in-memory kind (tests/support/memory_backend.py) as the only connection: every
action posted through the API changes the store as it says; the monitor publishes the store's
counts, follows a change made in the store, runs a bulk task through the bulk facet, evaluates
every alert rule kind and renders live lists and job pages from the jobs facet. Pages and
endpoints: ``test_tour_memory_kind.py``."""

from __future__ import annotations

import json
import logging

import pytest
from django.urls import reverse

from dashboard.actions.models import BulkTask
from dashboard.alerts.models import Alert
from dashboard.core import dash_redis, state_store
from dashboard.live import channels as live
from queues.keys import QueueRef
from tests.support.live import monitor_thread
from tests.support.memory_tour import METRICS_TOKEN, Q, admin, api_post, orders, shop  # noqa: F401  (fixtures)
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# --- every action, through the API, changes the store as it says -------------------------------


def test_every_action_changes_the_store(shop, admin):
    q = orders(shop)
    ok = {200, 201}

    def job_action(action, job_id, **body):
        return api_post(admin, "api_job_action", {"reason": "tour", **body}, action=action, job_id=job_id)

    def queue_action(action, queue="orders", **body):
        return api_post(admin, "api_queue_action", {"reason": "tour", **body}, action=action, name=queue)

    assert job_action("retry", "f1").status_code == 200
    assert (q.jobs["f1"].state, q.jobs["f1"].attempts_made, q.jobs["f1"].failed_reason) == ("waiting", 0, "")
    assert job_action("retry", "f1").status_code == 409  # no longer failed: said, not done twice
    assert job_action("discard", "f2").status_code == 200 and "f2" not in q.jobs
    assert job_action("discard", "a1").status_code == 409 and "a1" in q.jobs  # locked by its worker
    assert job_action("promote", "d1").status_code == 200 and q.jobs["d1"].state == "waiting"
    redriven = api_post(admin, "api_job_action", {"reason": "tour"}, name="orders-dlq", action="redrive", job_id="x1")
    assert redriven.status_code == 200, redriven.content
    assert not shop.queues[("bull", "orders-dlq")].jobs
    assert [j.id for j in q.jobs.values() if j.data == '{"order": 6601, "dead": true}' and j.state == "waiting"]

    assert queue_action("pause").status_code == 200 and q.paused
    assert queue_action("resume").status_code == 200 and not q.paused
    assert queue_action("clean", state="completed", older_than_minutes=10).json()["affected"] == 1
    assert "c1" not in q.jobs

    added = api_post(admin, "api_jobs", {"name": "gift-wrap", "data": {"ribbon": "red-8841"}, "opts": {}})
    assert added.status_code == 201, added.content
    assert q.jobs[added.json()["id"]].data == '{"ribbon":"red-8841"}' or "red-8841" in q.jobs[added.json()["id"]].data
    copied = job_action("duplicate", "w1")
    assert copied.status_code in ok, copied.content
    assert [j.data for j in q.jobs.values() if j.data == q.jobs["w1"].data and j.id != "w1"]

    preview = admin.post(
        reverse("edit_retry_preview", kwargs={**Q, "job_id": "f3"}), {"patch": '{"carrier": "dhl-6620"}'}
    )
    assert preview.status_code == 200 and "dhl-6620" in preview.content.decode()
    edited = job_action("edit-retry", "f3", patch={"carrier": "dhl-6620"})
    assert edited.status_code == 200, edited.content
    assert q.jobs["f3"].state == "waiting" and json.loads(q.jobs["f3"].data) == {"order": 7306, "carrier": "dhl-6620"}

    assert queue_action("set-concurrency", concurrency=4).status_code == 200 and q.concurrency == 4
    assert queue_action("set-rate-limit", max=10, duration=1000).status_code == 200
    assert (q.rate_max, q.rate_duration_ms) == (10, 1000)
    q.limited_until_ms = 2**53
    assert queue_action("remove-rate-limit-key").json()["affected"] == 1 and q.limited_until_ms == 0
    assert queue_action("remove-concurrency").status_code == 200 and q.concurrency is None
    assert queue_action("remove-rate-limit").status_code == 200 and q.rate_max is None
    settings_page = admin.get(reverse("queue_settings", kwargs=Q))
    assert settings_page.status_code == 200

    saved = queue_action(
        "edit-scheduler", **{"id": "nightly-report", "name": "report"}, pattern="0 4 * * *", data={}, opts={}
    )
    assert saved.status_code == 200, saved.content
    assert q.schedulers["nightly-report"].spec.pattern == "0 4 * * *"
    assert [j.id for j in q.jobs.values() if j.scheduler_id == "nightly-report"]  # its next iteration, delayed
    assert queue_action("remove-scheduler", id="nightly-report").status_code == 200
    assert "nightly-report" not in q.schedulers and not [j for j in q.jobs.values() if j.scheduler_id]

    # The page forms take the same road as the API.
    page_form = admin.post(reverse("job_action", kwargs={**Q, "action": "discard", "job_id": "p1"}), {"reason": "tour"})
    assert page_form.status_code in (200, 302) and "p1" not in q.jobs

    waiting = {j.id for j in q.jobs.values() if j.state in ("waiting", "prioritized")}
    assert queue_action("drain", delayed=True).json()["affected"] == len(waiting) > 0
    assert not waiting & set(q.jobs)

    emails = shop.queues[("bull", "emails")]
    assert emails.paused
    assert queue_action("obliterate", queue="emails", confirm="emails").status_code == 200
    assert ("bull", "emails") not in shop.queues

    audit = admin.get(reverse("audit")).content.decode()
    assert "job.retry" in audit or "retry" in audit


# --- the monitor publishes the store, follows a change in it, and runs a bulk task -------------


def state_counts() -> dict:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return {(q["connection"], q["name"]): q["counts"] for q in state["queues"]}


def test_the_monitor_publishes_the_store_and_runs_a_bulk_task(shop, admin, client):
    q = orders(shop)
    with monitor_thread(tick=0.3, name="tour-monitor", lock_ttl_ms=2000):
        wait_for(lambda: state_counts().get(("default", "orders"), {}).get("failed") == 3, timeout=20)
        assert state_counts()[("default", "orders")]["waiting"] == 2

        with shop.lock:  # a change made in the store itself reaches the published figures
            q.jobs["w1"].state, q.jobs["w1"].failed_reason, q.jobs["w1"].finished_on = "failed", "Boom", 1
        wait_for(lambda: state_counts()[("default", "orders")]["failed"] == 4, timeout=20)

        metrics = client.get(reverse("metrics"), HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}").content.decode()
        assert 'queue="orders"' in metrics

        preview = admin.post(
            reverse("bulk_preview", kwargs=Q), {"action": "retry", "state": "failed", "scope": "matching"}
        )
        assert preview.status_code == 200 and "f1" in preview.content.decode()
        started = api_post(
            admin,
            "api_bulk_start",
            {"action": "retry", "state": "failed", "scope": "matching", "reason": "tour", "rate": 0},
        )
        assert started.status_code == 202, started.content
        task_id = started.json()["id"]
        wait_for(lambda: BulkTask.objects.get(pk=task_id).state == BulkTask.DONE, timeout=30)
        wait_for(lambda: state_counts()[("default", "orders")]["failed"] == 0, timeout=20)

    assert not [j for j in q.jobs.values() if j.state == "failed"]
    task = admin.get(
        reverse("api_task", kwargs={"task_id": task_id}), HTTP_AUTHORIZATION=f"Bearer {admin.token}"
    ).json()
    assert (task["state"], task["moved"]) == ("done", 4)
    assert admin.get(reverse("task", kwargs={"task_id": task_id})).status_code == 200


def test_every_alert_kind_is_evaluated_on_the_store(shop, admin, settings, caplog):
    from queues.alert_kinds import KINDS
    from tests.support.alerting import make_rule

    settings.QUEUEWATCH_ALERT_INTERVAL_S = 1
    rules = {kind: make_rule(f"tour-{kind}", kind=kind, threshold=1, connection="default") for kind in KINDS}
    queue, dash = QueueRef("default", "bull", "orders"), dash_redis.dashboard_redis()
    dash_redis.watch(dash, dash_redis.Watch.job_list(queue, "failed"))  # a browser on the failed tab …
    dash_redis.watch(dash, dash_redis.Watch.job(queue, "a1"))  # … and one on the active job's page

    def fragments(group: str) -> str:
        return "".join(dash_redis.cached_fragments(dash, group))

    with caplog.at_level(logging.WARNING), monitor_thread(tick=0.3, name="tour-alerts", lock_ttl_ms=2000):
        # emails is paused and orders has two waiting jobs: both rules fire from the store's figures.
        wait_for(
            lambda: (
                Alert.objects.filter(rule=rules["paused"], queue="emails").exists()
                and Alert.objects.filter(rule=rules["backlog"], queue="orders").exists()
            ),
            timeout=30,
        )
        # The live list and the live job page are rendered from the jobs facet.
        wait_for(lambda: "f3" in fragments(live.list_group(queue, "failed")), timeout=20)
        with shop.lock:
            orders(shop).jobs["a1"].logs.append("handed to carrier 5518")
        wait_for(lambda: "handed to carrier 5518" in fragments(live.job_group(queue, "a1")), timeout=20)
    trouble = [r for r in caplog.records if r.levelno >= logging.ERROR or "restarting" in r.getMessage()]
    assert not trouble, [r.getMessage() for r in trouble]
    for rule in rules.values():
        page = admin.get(reverse("alert_rule", kwargs={"rule_id": rule.pk}))
        assert page.status_code == 200, rule.kind
    assert "The in-memory store answers." in admin.get(reverse("health")).content.decode()


def test_check_queues_runs_the_kinds_health_checks(shop):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("check_queues", "--json", "--no-store", stdout=out)  # nothing critical fails: exit 0
    report = json.loads(out.getvalue())
    found = {(c["kind"], c["queue"], c["status"]) for conn in report["connections"] for c in conn["results"]}
    assert ("queue.paused", "emails", "fail") in found and ("queue.paused", "orders", "pass") in found


# --- the health page speaks of the kind, not of Redis -------------------------------------------


def test_the_health_page_does_not_call_a_non_redis_store_redis(shop, admin):
    html = admin.get(reverse("health")).content.decode()
    # The kind's own reachability check (memory_backend.py), in its own words.
    assert 'data-kind="memory.reachable" data-status="pass"' in html
    assert "In-memory store reachable" in html and "The in-memory store answers." in html
    assert "Redis" not in html[html.index("<main") :], "the health page calls the in-memory store Redis"


def test_an_offline_store_fails_its_own_reachability_check(shop, admin):
    shop.offline = True
    html = admin.get(reverse("health")).content.decode()
    assert 'data-kind="memory.reachable" data-status="fail"' in html
    assert "Cannot reach this connection: the in-memory store is offline." in html
    assert "Redis" not in html[html.index("<main") :]


def test_a_kind_that_cannot_tell_its_workers_is_not_warned_about(shop, caplog):
    with caplog.at_level(logging.WARNING), monitor_thread(tick=0.3, name="tour-workers", lock_ttl_ms=2000):
        wait_for(lambda: state_counts().get(("default", "orders"), {}).get("failed") == 3, timeout=20)
        wait_for(lambda: dash_redis.read_workers(dash_redis.dashboard_redis()) is not None, timeout=20)
    assert not [r for r in caplog.records if "could not read the workers" in r.getMessage()]
