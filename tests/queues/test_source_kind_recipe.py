"""The recipe in docs/sources.md is true: a new source kind is one class plus one entry in
``queues.sources.factory.SOURCE_KINDS``, and the features then read through it end to end
(settings, registry, overview page, JSON API, error banner) without any feature module knowing.

The kind here keeps its queues in memory; no Redis is involved at all, which also proves the
overview no longer reaches for a raw Redis client.
"""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from dashboard.connections.registry import get_registry, reset_registry
from queues.connections import connection_specs_from_env
from queues.errors import ConfigurationError, NotOffered
from queues.sources import Source, factory
from tests.support.memory_source import MemorySource, register_memory_kind
from tests.support.redis_db import point_at

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory_kind(monkeypatch):
    register_memory_kind(monkeypatch)


@pytest.fixture
def memory_connections(settings, memory_kind):
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = None  # no monitor has published a queue list
    point_at(
        settings,
        *connection_specs_from_env(
            {
                "QUEUEWATCH_REDIS_URL": "memory://shop",
                "QUEUEWATCH_CONNECTIONS": "archive",
                "QUEUEWATCH_REDIS_URL_ARCHIVE": "memory://offline",
            },
            default_url=None,
        ),
    )
    yield
    reset_registry()


def test_settings_accept_the_new_scheme_only_once_the_kind_is_registered(monkeypatch):
    env = {"QUEUEWATCH_REDIS_URL": "memory://shop"}
    with pytest.raises(ConfigurationError, match=r"got scheme 'memory'"):
        connection_specs_from_env(env, default_url=None)
    monkeypatch.setattr(factory, "SOURCE_KINDS", (*factory.SOURCE_KINDS, MemorySource))
    assert [s.scheme for s in connection_specs_from_env(env, default_url=None)] == ["memory"]
    built_in = [f"{scheme}://" for kind in factory.SOURCE_KINDS[:-1] for scheme in kind.schemes]
    every_scheme = re.escape(", ".join(built_in) + " or memory://")  # the new kind listed last
    with pytest.raises(ConfigurationError, match=rf"must be a {every_scheme} URL"):
        connection_specs_from_env({"QUEUEWATCH_REDIS_URL": "http://x"}, default_url=None)
    with pytest.raises(ConfigurationError, match="not a valid in-memory store URL: name the store"):
        connection_specs_from_env({"QUEUEWATCH_REDIS_URL": "memory:///"}, default_url=None)


def test_registry_holds_the_new_kind_and_discovers_through_it(memory_connections):
    registry = get_registry()
    source = registry.source("default")
    assert isinstance(source, MemorySource) and isinstance(source, Source)
    assert [q.name for q in registry.queues("default")] == ["emails", "orders"]
    with pytest.raises(NotOffered, match="“default” \\(memory\\) does not offer job lists and job pages"):
        registry.jobs("default")


def test_a_reset_registry_closes_its_sources(memory_connections, monkeypatch):
    closed = []
    monkeypatch.setattr(MemorySource, "close", lambda self: closed.append(self.spec.name))
    get_registry().source("archive")
    reset_registry()
    assert sorted(closed) == ["archive", "default"]
    assert get_registry().source("default") is not None  # a new registry, with new sources


def test_overview_page_reads_the_new_kind_and_shows_its_own_failure(logged_in, memory_connections):
    response = logged_in.get(reverse("overview"))
    html = response.content.decode()
    assert response.status_code == 200
    assert ">orders</a>" in html and ">emails</a>" in html
    # The raw value (for the browser) and the count as the rules write it (compact from 10,000), linked.
    for n, shown in ((9173, "9,173"), (4421, "4,421"), (55501, "55.5K")):
        assert f'value="{n}">{shown}</data></a>' in html
    assert "“archive”: the in-memory store is offline" in html


def test_api_queue_list_reads_the_new_kind(client, user, memory_connections):
    out = StringIO()
    call_command("api_token", user.username, stdout=out)
    body = client.get(reverse("api_queues"), HTTP_AUTHORIZATION=f"Bearer {out.getvalue().strip()}").json()
    assert {q["name"]: q["counts"]["waiting"] for q in body["queues"]} == {"emails": 0, "orders": 9173}
    assert body["connections"] == [
        {"name": "default", "ok": True, "error": None},
        {"name": "archive", "ok": False, "error": "the in-memory store is offline"},
    ]
