"""The recipe of docs/sources.md holds for a kind that offers *every* facet: ``FullMemorySource``
(tests/support/memory_backend.py) keeps BullMQ-like queues in memory and is added only to
``queues.sources.factory.SOURCE_KINDS``. With it as the only monitored connection (no monitored
Redis at all: the test's Redis database is only the dashboard's own store and channel layer), an
admin gets every page and every API endpoint from the store's data, and the kind types as a
``Source`` with all six facets. Actions, bulk tasks, alerts and the monitor:
``test_tour_memory_actions.py``."""

from __future__ import annotations

import json

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse, reverse_lazy

from dashboard.connections.registry import get_registry
from tests.support.memory_backend import FullMemorySource
from tests.support.memory_tour import Q, admin, shop  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_registry_serves_the_full_kind(shop):
    source = get_registry().source("default")
    assert isinstance(source, FullMemorySource)
    assert all(getattr(source, f) is not None for f in ("jobs", "probes", "commands", "schedulers", "bulk", "server"))
    assert [q.name for q in get_registry().queues("default")] == ["emails", "orders", "orders-dlq"]


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
    ("find", {}, "?find=f1&list=1", reverse_lazy("job", kwargs={**Q, "job_id": "f1"})),
    ("queue_find", Q, "?state=failed&where=order%20%3D%207304", 'data-job-id="f1"'),
    ("alert_history", {}, "", ""),
    ("alert_rules", {}, "", ""),
    ("alert_rule_new", {}, "", ""),
    ("silences", {}, "", ""),
    ("channels", {}, "", ""),
    ("audit", {}, "", ""),
    ("tasks", {}, "", ""),
]
STATE_TEXT = {
    "waiting": "w1",
    "active": "a1",
    "delayed": "d1",
    "prioritized": "p1",
    "waiting-children": "gc1",
    "completed": "c1",
    "failed": "f2",
}


def body_of(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.mark.parametrize("name,kwargs,query,shown", PAGES, ids=[f"{p[0]}{p[2][:20]}" for p in PAGES])
def test_every_page_shows_the_store(shop, admin, name, kwargs, query, shown):
    response = admin.get(reverse(name, kwargs=kwargs) + query)
    assert response.status_code == 200, (response.status_code, body_of(response)[:2000])
    assert str(shown) in body_of(response)


@pytest.mark.parametrize("state", list(STATE_TEXT))
def test_the_queue_page_lists_each_state_from_the_store(shop, admin, state):
    response = admin.get(reverse("queue", kwargs=Q) + f"?state={state}")
    assert response.status_code == 200
    assert reverse("job", kwargs={**Q, "job_id": STATE_TEXT[state]}) in response.content.decode()


# --- every endpoint of the URL resolver --------------------------------------------------------

PARAMS = {**Q, "job_id": "f1", "field": "data", "scheduler_id": "nightly-report", "action": "retry"}
QUERIES = {"api_find": "?id=f1", "api_queue_find": "?state=failed&where=order%20%3D%207304"}  # what they need
# Endpoints whose path names a database object (not the source) or that only answer POST; the
# POSTs are exercised by the action tests below, the objects need rows this tour does not make.
NOT_FETCHED = {
    "token_revoke": "names an API token row (POST only)",
    "alert_rule": "names an alert rule row (fetched for every rule kind in the alert test)",
    "alert_rule_edit": "names an alert rule row",
    "alert_rule_delete": "names an alert rule row (POST)",
    "silence_expire": "names a silence row (POST)",
    "window_delete": "names a maintenance window row (POST)",
    "channel_edit": "names a channel row",
    "channel_delete": "names a channel row (POST)",
    "channel_test": "names a channel row (POST)",
    "channel_log": "names a channel row",
    "task": "names a bulk task row (fetched in the bulk test)",
    "task_cancel": "names a bulk task row (POST)",
    "api_task": "fetched in the bulk test",
    "api_task_cancel": "names a bulk task row (POST)",
    "search": "names a background search row (tests/browse/test_background_search.py)",
    "search_cancel": "names a background search row (POST)",
    "api_search": "names a background search row",
    "api_search_cancel": "names a background search row (POST)",
    "logout": "ends the session the tour needs",
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
        url = reverse(name, kwargs={k: PARAMS[k] for k in params}) + QUERIES.get(name, "")
        response = (
            admin.get(url, HTTP_AUTHORIZATION=f"Bearer {admin.token}") if name.startswith("api_") else admin.get(url)
        )
        body_of(response)  # a streamed body fails while it is read
        statuses[name] = response.status_code
        fetched.append(name)
    assert not {n: s for n, s in statuses.items() if s >= 500}, statuses
    post_only = {n for n, s in statuses.items() if s == 405}
    assert (
        post_only
        - {
            "api_job_action",
            "api_queue_action",
            "api_bulk_preview",
            "api_bulk_start",
            "job_action",
            "queue_action",
            "bulk_start",
            "bulk_preview",
            "dlq_envelope_confirm",
            "edit_retry_preview",
            "set_language",
            "window_new",
            "cron_preview",
            "silence_new",
            "search_start",
            "api_search_start",
        }
        == set()
    ), statuses
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
    report, errors, status = api.run(
        ["--cache-dir", str(root / ".mypy_cache"), str(tmp_path / "full_kind_conforms.py")]
    )
    assert status == 0, report + errors
