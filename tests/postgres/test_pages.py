"""The dashboard pointed at a Redis connection and a BullMQ-on-PostgreSQL one at once: the
overview, a queue page and a job page show the PostgreSQL queues Node made beside the Redis
ones, and a PostgreSQL server that cannot be reached is shown as unavailable, never a 500."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from queues.sources import ConnectionSpec
from tests.support.redis_db import point_at
from tests.support.servers import refused_port

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


@pytest.fixture
def both_kinds(settings, node_fixture_db, bullmq_fixture, pg_bullmq):
    """The app on the Node-built Redis queues ('default') and the Node-built PostgreSQL ones ('pg')."""
    point_at(settings, ConnectionSpec("default", node_fixture_db.url, ("bull",)), pg_bullmq.spec("pg"))
    yield pg_bullmq
    reset_registry()


def text_of(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def test_the_overview_lists_postgres_queues_beside_redis_ones(both_kinds, logged_in):
    page = logged_in.get(reverse("overview"))
    assert page.status_code == 200
    body = page.content.decode()
    for name in ("pg-mixed", "pg-paused", "tenant/a b·ü", "other-schema-q", "mixed", "paused-q"):
        assert html.escape(name) in body or name in body, name
    assert reverse("queue", args=["pg", "bullmq", "tenant/a b·ü"]) in body  # a link that routes back


def test_a_postgres_queue_page_shows_node_s_counts_and_jobs(both_kinds, logged_in):
    node = both_kinds.reported("pg-mixed")
    page = logged_in.get(reverse("queue", args=["pg", "bullmq", "pg-mixed"]) + "?state=waiting")
    assert page.status_code == 200
    text = text_of(page)
    for job_id in node["ids"]["waiting"]:
        assert reverse("job", args=["pg", "bullmq", "pg-mixed", job_id]) in page.content.decode(), job_id
    for name in ("wait-lifo", "wait-a", "wait-b", "custom"):
        assert name in text
    failed = logged_in.get(reverse("queue", args=["pg", "bullmq", "pg-mixed"]) + "?state=failed")
    assert failed.status_code == 200 and "boom: first" in text_of(failed)


def test_a_postgres_job_page_shows_its_fields_redacted(both_kinds, logged_in):
    job_id = both_kinds.reported("pg-mixed")["ids"]["failed"][0]
    page = logged_in.get(reverse("job", args=["pg", "bullmq", "pg-mixed", job_id]))
    assert page.status_code == 200
    text = text_of(page)
    assert "boom: first" in text and "second line of the reason" in text
    assert "hunter2" not in text and "[redacted]" in text


def test_actions_the_kind_lacks_are_not_offered_not_failed(both_kinds, logged_in):
    groups = logged_in.get(reverse("queue_errors", args=["pg", "bullmq", "pg-mixed"]))
    assert groups.status_code == 501
    assert "Connection “pg” (postgres) does not offer job exports and error groups." in text_of(groups)
    export = logged_in.get(reverse("api_export", args=["pg", "bullmq", "pg-mixed"]) + "?format=jsonl&state=failed")
    assert export.status_code == 501 and export.json()["error"] == "not_offered"


@pytest.fixture
def unreachable_postgres(settings, node_fixture_db, bullmq_fixture):
    url = f"postgres://qw:s3cret-pw@127.0.0.1:{refused_port()}/gone"
    redis_side = ConnectionSpec("default", node_fixture_db.url, ("bull",))
    point_at(settings, redis_side, ConnectionSpec("pg", url, ("bullmq",)))
    yield
    reset_registry()


def test_an_unreachable_postgres_is_shown_unavailable_and_redis_still_listed(unreachable_postgres, logged_in):
    overview = logged_in.get(reverse("overview"))
    assert overview.status_code == 200
    text = text_of(overview)
    assert "Cannot reach connection “pg”" in text and "mixed" in text
    assert "s3cret-pw" not in overview.content.decode()
    queue = logged_in.get(reverse("queue", args=["pg", "bullmq", "pg-mixed"]))
    assert queue.status_code == 503 and "Connection unavailable" in text_of(queue)
    assert "s3cret-pw" not in queue.content.decode()


def test_queue_figures_and_bullmq_metrics_are_not_offered_on_postgres(both_kinds, logged_in):
    page = logged_in.get(reverse("queue", args=["pg", "bullmq", "pg-mixed"]))
    assert page.status_code == 200
    text = text_of(page)
    assert "Priorities and limits" in text
    assert "jobs per priority, the rate-limit window and BullMQ's own metrics" in text  # the "not offered" notice
    history = logged_in.get(reverse("queue_history", args=["pg", "bullmq", "pg-mixed"]) + "?range=1h").json()
    assert history["bullmq_metrics"] == {"offered": False, "recorded": False}
    assert set(history["bullmq_completed"]) == {None}
