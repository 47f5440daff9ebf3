"""The recipe of docs/sources.md holds for a kind that offers *every* facet: ``FullMemorySource``
(tests/support/memory_backend.py) keeps BullMQ-like queues in memory and is added only to
``queues.sources.factory.SOURCE_KINDS``. With it as the only monitored connection (no monitored
Redis at all: the test's Redis database is only the dashboard's own store and channel layer), an
admin gets every page and every API endpoint, every action changes the store as it says, a bulk
task runs, and the monitor publishes the store's counts and follows a change made in it."""

from __future__ import annotations

import json
import logging

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from dashboard.actions.models import BulkTask
from dashboard.alerts.models import Alert
from dashboard.live import channels as live
from dashboard.registry import get_registry, reset_registry
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.accounts import token_for, user_with
from tests.support.live import monitor_thread
from tests.support.memory_backend import STORES, FullMemorySource, register_full_memory_kind, seeded_shop
from tests.support.redis_db import point_at
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

Q = {"connection": "default", "prefix": "bull", "name": "orders"}
METRICS_TOKEN = "tour-metrics-token"


@pytest.fixture
def shop(settings, redis_db, monkeypatch):
    """The in-memory kind as the only connection; the dashboard's own Redis and channel layer
    on the test's database (like ``live_setup``, minus the monitored Redis)."""
    from channels.layers import channel_layers

    register_full_memory_kind(monkeypatch)
    store = STORES["shop"] = seeded_shop()
    point_at(settings, ConnectionSpec("default", "memory://shop", ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    settings.QUEUEWATCH_METRICS_TOKEN = METRICS_TOKEN
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [{"address": redis_db.url, "socket_timeout": None}],
                                                      "prefix": "queuewatch:asgi"}}}
    channel_layers.backends.clear()
    yield store
    channel_layers.backends.clear()
    reset_registry()
    STORES.pop("shop", None)


@pytest.fixture
def admin(client):
    user = user_with("admin")
    client.force_login(user)
    client.token = token_for(user)
    return client


def orders(store):
    return store.queues[("bull", "orders")]


def api_post(client, url_name: str, body: dict, **kwargs):
    return client.post(reverse(url_name, kwargs={**Q, **kwargs}), data=json.dumps(body), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {client.token}")


def test_the_registry_serves_the_full_kind(shop):
    source = get_registry().source("default")
    assert isinstance(source, FullMemorySource)
    assert all(getattr(source, f) is not None for f in ("jobs", "probes", "commands", "schedulers", "bulk", "server"))
    assert [q.name for q in get_registry().queues("default")] == ["emails", "orders"]


PAGES = [  # (url name, kwargs, query, a text of the store the page must show)
    ("overview", {}, "", ">orders</a>"),
    ("job", {**Q, "job_id": "f1"}, "", "CardDeclined: issuer said no (7304)"),
    ("job", {**Q, "job_id": "a1"}, "", "picked from shelf 19"),
    ("job_raw", {**Q, "field": "returnvalue", "job_id": "c1"}, "", "RCPT-5521"),
    ("schedulers", {}, "", "nightly-report"),
    ("queue_schedulers", Q, "", "nightly-report"),
    ("scheduler_edit", {**Q, "scheduler_id": "nightly-report"}, "", "0 3 * * *"),
    ("health", {}, "", "orders"),
    ("queue_settings", Q, "", "orders"),
    ("add_job", Q, "", "orders"),
    ("edit_retry", {**Q, "job_id": "f1"}, "", "7304"),
    ("queue_errors", Q, "", "CardDeclined"),
    ("queue_export", Q, "?format=jsonl&state=failed", '"id":"f1"'),
    ("queue_export", Q, "?format=csv&state=failed", "CardDeclined: issuer said no (7305)"),
    ("queue_history", Q, "", ""),
    ("queue_timings", Q, "", ""),
    ("queue_advice", Q, "", ""),
    ("alert_history", {}, "", ""),
    ("alert_rules", {}, "", ""),
    ("alert_rule_new", {}, "", ""),
    ("silences", {}, "", ""),
    ("channels", {}, "", ""),
    ("audit", {}, "", ""),
    ("tasks", {}, "", ""),
]
STATE_TEXT = {"waiting": "w1", "active": "a1", "delayed": "d1", "prioritized": "p1", "waiting-children": "gc1",
              "completed": "c1", "failed": "f2"}


def body_of(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.mark.parametrize("name,kwargs,query,shown", PAGES, ids=[f"{p[0]}{p[2][:20]}" for p in PAGES])
def test_every_page_shows_the_store(shop, admin, name, kwargs, query, shown):
    response = admin.get(reverse(name, kwargs=kwargs) + query)
    assert response.status_code == 200, (response.status_code, body_of(response)[:2000])
    assert shown in body_of(response)


@pytest.mark.parametrize("state", list(STATE_TEXT))
def test_the_queue_page_lists_each_state_from_the_store(shop, admin, state):
    response = admin.get(reverse("queue", kwargs=Q) + f"?state={state}")
    assert response.status_code == 200
    assert reverse("job", kwargs={**Q, "job_id": STATE_TEXT[state]}) in response.content.decode()


# --- every endpoint of the URL resolver --------------------------------------------------------

PARAMS = {**Q, "job_id": "f1", "field": "data", "scheduler_id": "nightly-report", "action": "retry"}
# Endpoints whose path names a database object (not the source) or that only answer POST; the
# POSTs are exercised by the action tests below, the objects need rows this tour does not make.
NOT_FETCHED = {
    "token_revoke": "names an API token row (POST only)",
    "alert_rule": "names an alert rule row (fetched for every rule kind in the alert test)",
    "alert_rule_edit": "names an alert rule row",
    "alert_rule_delete": "names an alert rule row (POST)", "silence_expire": "names a silence row (POST)",
    "window_delete": "names a maintenance window row (POST)", "channel_edit": "names a channel row",
    "channel_delete": "names a channel row (POST)", "channel_test": "names a channel row (POST)",
    "channel_log": "names a channel row", "task": "names a bulk task row (fetched in the bulk test)",
    "task_cancel": "names a bulk task row (POST)", "api_task": "fetched in the bulk test",
    "api_task_cancel": "names a bulk task row (POST)", "logout": "ends the session the tour needs",
    "migrate_repeat": "needs a legacy repeatable entry, which the in-memory kind does not have",
}


def endpoints(patterns=None, prefix=""):
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            if not str(p.pattern).startswith("admin/"):
                yield from endpoints(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern) and p.name:
            yield p.name, sorted(p.pattern.converters)


def test_every_endpoint_answers_without_a_server_error(shop, admin):
    fetched, statuses = [], {}
    for name, params in endpoints():
        if name in NOT_FETCHED:
            continue
        url = reverse(name, kwargs={k: PARAMS[k] for k in params})
        response = admin.get(url, HTTP_AUTHORIZATION=f"Bearer {admin.token}") if name.startswith("api_") else admin.get(url)
        body_of(response)  # a streamed body fails while it is read
        statuses[name] = response.status_code
        fetched.append(name)
    assert not {n: s for n, s in statuses.items() if s >= 500}, statuses
    post_only = {n for n, s in statuses.items() if s == 405}
    assert post_only - {
        "api_job_action", "api_queue_action", "api_bulk_preview", "api_bulk_start", "job_action", "queue_action",
        "bulk_start", "bulk_preview", "edit_retry_preview", "set_language", "window_new", "cron_preview",
        "silence_new"} == set(), statuses
    api = {n: s for n, s in statuses.items() if n.startswith("api_") and s != 405}
    assert api and all(s == 200 for s in api.values()), api


def test_the_api_reads_the_store(shop, admin):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {admin.token}"}
    queue = admin.get(reverse("api_queue", kwargs=Q), **auth).json()
    assert queue["counts"]["failed"] == 3 and queue["counts"]["waiting"] == 2
    jobs = admin.get(reverse("api_jobs", kwargs=Q) + "?state=failed", **auth).json()
    assert {j["id"] for j in jobs["jobs"]} == {"f1", "f2", "f3"}
    job = admin.get(reverse("api_job", kwargs={**Q, "job_id": "f1"}), **auth).json()
    assert "7304" in json.dumps(job)


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

    preview = admin.post(reverse("edit_retry_preview", kwargs={**Q, "job_id": "f3"}), {"patch": '{"carrier": "dhl-6620"}'})
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

    saved = queue_action("edit-scheduler", **{"id": "nightly-report", "name": "report"}, pattern="0 4 * * *", data={}, opts={})
    assert saved.status_code == 200, saved.content
    assert q.schedulers["nightly-report"].spec.pattern == "0 4 * * *"
    assert [j.id for j in q.jobs.values() if j.scheduler_id == "nightly-report"]  # its next iteration, delayed
    assert queue_action("remove-scheduler", id="nightly-report").status_code == 200
    assert "nightly-report" not in q.schedulers and not [j for j in q.jobs.values() if j.scheduler_id]

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
    state = live.read_state(live.dashboard_redis()) or {"queues": []}
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

        preview = admin.post(reverse("bulk_preview", kwargs=Q), {"action": "retry", "state": "failed",
                                                                 "scope": "matching"})
        assert preview.status_code == 200 and "f1" in preview.content.decode()
        started = api_post(admin, "api_bulk_start", {"action": "retry", "state": "failed", "scope": "matching",
                                                     "reason": "tour", "rate": 0})
        assert started.status_code == 202, started.content
        task_id = started.json()["id"]
        wait_for(lambda: BulkTask.objects.get(pk=task_id).state == BulkTask.DONE, timeout=30)
        wait_for(lambda: state_counts()[("default", "orders")]["failed"] == 0, timeout=20)

    assert not [j for j in q.jobs.values() if j.state == "failed"]
    task = admin.get(reverse("api_task", kwargs={"task_id": task_id}),
                     HTTP_AUTHORIZATION=f"Bearer {admin.token}").json()
    assert (task["state"], task["moved"]) == ("done", 4)
    assert admin.get(reverse("task", kwargs={"task_id": task_id})).status_code == 200


def test_every_alert_kind_is_evaluated_on_the_store(shop, admin, settings, caplog):
    from queues.alert_kinds import KINDS
    from tests.support.alerting import make_rule

    settings.QUEUEWATCH_ALERT_INTERVAL_S = 1
    rules = {kind: make_rule(f"tour-{kind}", kind=kind, threshold=1, connection="default") for kind in KINDS}
    queue, dash = QueueRef("default", "bull", "orders"), live.dashboard_redis()
    live.watch(dash, live.Watch.job_list(queue, "failed"))  # a browser on the failed tab …
    live.watch(dash, live.Watch.job(queue, "a1"))  # … and one on the active job's page

    def fragments(group: str) -> str:
        return "".join(live.cached_fragments(dash, group))

    with caplog.at_level(logging.WARNING), monitor_thread(tick=0.3, name="tour-alerts", lock_ttl_ms=2000):
        # emails is paused and orders has two waiting jobs: both rules fire from the store's figures.
        wait_for(lambda: Alert.objects.filter(rule=rules["paused"], queue="emails").exists()
                 and Alert.objects.filter(rule=rules["backlog"], queue="orders").exists(), timeout=30)
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


FULL_KIND_CONFORMS = """
from queues.sources.base import Source
from queues.sources.facets import BulkFacet, CommandsFacet, JobsFacet, ProbesFacet, SchedulersFacet, ServerFacet
from queues.sources.spec import ConnectionSpec
from tests.support.memory_backend import FullMemorySource

kind = FullMemorySource(ConnectionSpec("default", "memory://shop", ("bull",)))
source: Source = kind
facets: tuple[JobsFacet, ProbesFacet, CommandsFacet, SchedulersFacet, BulkFacet, ServerFacet] = (
    kind.jobs, kind.probes, kind.commands, kind.schedulers, kind.bulk, kind.server)
"""


def test_the_full_kind_types_as_a_source_with_every_facet(tmp_path, monkeypatch):
    """The signatures are the protocols' own (mypy, as ``tests/project/test_typing.py`` checks the Redis kind)."""
    from pathlib import Path

    from mypy import api

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "full_kind_conforms.py").write_text(FULL_KIND_CONFORMS)
    monkeypatch.chdir(root)
    report, errors, status = api.run(["--cache-dir", str(root / ".mypy_cache"), str(tmp_path / "full_kind_conforms.py")])
    assert status == 0, report + errors
