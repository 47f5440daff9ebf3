"""What the tours of the full in-memory kind share (``tests/project/test_tour_memory_*.py``):
the kind as the only connection, seeded with ``seeded_shop``; an admin with an API token; a
JSON POST to an API endpoint of queue ``bull:orders``."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from queues.connections import ConnectionSpec
from tests.support.accounts import token_for, user_with
from tests.support.memory_backend import STORES, MemQueue, MemStore, register_full_memory_kind, seeded_shop
from tests.support.redis_db import point_at

Q = {"connection": "default", "prefix": "bull", "name": "orders"}
METRICS_TOKEN = "tour-metrics-token"


@pytest.fixture
def shop(settings, redis_db, monkeypatch):
    """The in-memory kind as the only connection; the dashboard's own Redis and channel layer
    on the test's database (like ``live_setup``, minus the monitored Redis)."""
    from channels.layers import channel_layers as layers

    from dashboard.core.channel_layer import channel_layers

    register_full_memory_kind(monkeypatch)
    store = STORES["shop"] = seeded_shop()
    point_at(settings, ConnectionSpec("default", "memory://shop", ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    settings.QUEUEWATCH_METRICS_TOKEN = METRICS_TOKEN
    settings.CHANNEL_LAYERS = channel_layers(redis_db.url, settings.SECRET_KEY)
    layers.backends.clear()
    yield store
    layers.backends.clear()
    reset_registry()
    STORES.pop("shop", None)


@pytest.fixture
def admin(client):
    user = user_with("admin")
    client.force_login(user)
    client.token = token_for(user)
    return client


def orders(store: MemStore) -> MemQueue:
    return store.queues[("bull", "orders")]


def api_post(client, url_name: str, body: dict, **kwargs):
    return client.post(
        reverse(url_name, kwargs={**Q, **kwargs}),
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {client.token}",
    )
