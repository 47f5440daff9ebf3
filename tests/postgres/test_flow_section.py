"""The flow section of a job page on BullMQ's PostgreSQL backend, against a flow real Node BullMQ
6.7 ran there (tests/node/pg_flow_outcomes.mjs): a parent's children are listed as BullMQ recorded
them — pending, processed (with the return value), failed but ignored and failed so as to fail
the parent (each with its reason) — equal to ``Job.getDependencies()``, on the page and in the
API, and a child's page says what its failure does to the parent (the Redis kind's counterpart:
tests/browse/test_flow_section_node.py)."""

from __future__ import annotations

import json
from html import unescape

import pytest
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from queues.sources import ConnectionSpec
from tests.support.accounts import token_for, user_with
from tests.support.redis_db import point_at
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


@pytest.fixture(scope="module")
def flow_db(postgres_server):
    url = postgres_server.create_database("pg_flow_outcomes")
    ran = run_node("pg_flow_outcomes.mjs", url)
    assert ran["childStates"] == {"c-ok": "completed", "c-ignored": "failed", "c-fatal": "failed", "c-later": "waiting"}
    return url, ran


@pytest.fixture
def flow(settings, flow_db):
    url, ran = flow_db
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    yield ran
    reset_registry()


def section(html: str, title: str) -> str:
    start = html.index(title)
    return html[start : html.index("</ul>", start)]


def qualified(deps: dict) -> dict:
    """``getDependencies()`` with each key as every kind shows it: BullMQ's PostgreSQL backend
    stores ``<queue>:<id>`` within the flow's schema, Queuewatch shows ``<schema>:<queue>:<id>``."""

    def key(k: str) -> str:
        return f"bullmq:{k}"

    return {
        "processed": {key(k): v for k, v in deps["processed"].items()},
        "unprocessed": [key(k) for k in deps["unprocessed"]],
        "ignored": {key(k): v for k, v in deps["ignored"].items()},
        "failed": [key(k) for k in deps["failed"]],
    }


def test_a_parents_children_are_listed_as_bullmq_recorded_them_on_postgres(client, flow):
    deps = qualified(flow["dependencies"])
    client.force_login(user_with("viewer"))
    html = unescape(client.get(reverse("job", args=["pg", "bullmq", "parents", "parent-1"])).content.decode())
    (pending,) = deps["unprocessed"]
    assert pending == "bullmq:kids-later:c-later" and pending in section(html, "Pending children (1)")
    # Each child links to its own page, as on Redis.
    assert reverse("job", args=["pg", "bullmq", "kids-later", "c-later"]) in section(html, "Pending children (1)")
    processed = section(html, "Processed children (1)")
    ((ok_key, ok_value),) = deps["processed"].items()
    # The return value as PostgreSQL writes the stored jsonb (a space after the colon).
    assert ok_key in processed and '{"rows": 3}' in processed
    ignored = section(html, "Failed children the parent went on without (1)")
    ((ignored_key, ignored_reason),) = deps["ignored"].items()
    assert ignored_key in ignored and ignored_reason == "ignored boom" and "ignored boom" in ignored
    assert "c-fatal" not in ignored
    fatal = section(html, "Failed children that fail the parent (1)")
    (fatal_key,) = deps["failed"]
    assert fatal_key in fatal and "fatal boom" in fatal and "c-ignored" not in fatal

    api = client.get(
        reverse("api_job", args=["pg", "bullmq", "parents", "parent-1"]),
        HTTP_AUTHORIZATION=f"Bearer {token_for(user_with('operator', username='api'))}",
    ).json()
    assert api["children"] == {
        "pending": deps["unprocessed"],
        "processed": sorted(deps["processed"]),
        "ignored": sorted(deps["ignored"]),
        "failed": deps["failed"],
    }
    outcomes = api["children_outcomes"]
    assert json.loads(outcomes[ok_key]) == ok_value
    assert outcomes[ignored_key] == "ignored boom" and outcomes[fatal_key] == "fatal boom"


def test_a_childs_page_on_postgres_says_what_its_failure_does_to_the_parent(client, flow):
    client.force_login(user_with("viewer"))

    def page(job_id: str) -> str:
        return unescape(client.get(reverse("job", args=["pg", "bullmq", "kids", job_id])).content.decode())

    assert "its parent fails too (failParentOnFailure)" in page("c-fatal")
    assert "its parent ignores the failure" in page("c-ignored")
    assert "its parent keeps waiting for it" in page("c-ok")
    # The parent is linked, under the flow's schema.
    assert reverse("job", args=["pg", "bullmq", "parents", "parent-1"]) in page("c-ok")
