"""Shared fixtures. A single redis-server is started for the session on a free port; tests
use separate database numbers (or prefixes) so they do not see each other's keys."""

from __future__ import annotations

import contextlib

import pytest

from dashboard.registry import reset_registry
from queues.connections import ConnectionSpec
from tests.support.servers import RedisServer, run_node

NODE_FIXTURE_DB = 1
SCRATCH_DB = 2


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


@contextlib.contextmanager
def emptied_db(redis_server, db: int):
    """A client on Redis database ``db`` (each test module that needs one owns a number),
    emptied first."""
    client = redis_server.client(db)
    client.flushdb()
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def app_on_db(settings, redis_server, db: int):
    """The app pointed at Redis database ``db`` (emptied first, prefix 'bull'); yields its URL."""
    with emptied_db(redis_server, db):
        point_at(settings, ConnectionSpec("default", redis_server.url(db), ("bull",)))
        try:
            yield redis_server.url(db)
        finally:
            reset_registry()


@pytest.fixture
def redis_client(redis_server):
    """A client on the scratch database, emptied before each test."""
    with emptied_db(redis_server, SCRATCH_DB) as client:
        yield client


@pytest.fixture(scope="session")
def bullmq_fixture(redis_server):
    """Queues built by real Node BullMQ 6 (tests/node/build_fixture.mjs), once per session.
    Returns what Node itself reported: getJobCounts() per queue and job details."""
    redis_server.client(NODE_FIXTURE_DB).flushdb()
    return run_node("build_fixture.mjs", redis_server.url(NODE_FIXTURE_DB))


def point_at(settings, *specs: ConnectionSpec) -> None:
    settings.QUEUEWATCH_CONNECTIONS = list(specs)
    reset_registry()


@pytest.fixture
def node_queues(settings, redis_server, bullmq_fixture):
    """The app pointed at the Node-built queues (prefixes 'bull' and '{app:bull}')."""
    point_at(settings, ConnectionSpec("default", redis_server.url(NODE_FIXTURE_DB), ("bull", "{app:bull}")))
    yield bullmq_fixture
    reset_registry()


@pytest.fixture
def scratch_queues(settings, redis_server, redis_client):
    """The app pointed at the (emptied) scratch database, prefix 'bull'."""
    point_at(settings, ConnectionSpec("default", redis_server.url(SCRATCH_DB), ("bull",)))
    yield redis_client
    reset_registry()


ACTIONS_DB = 11


@pytest.fixture
def actions_redis(settings, redis_server):
    """The app pointed at the (emptied) database of the action page tests; yields its URL."""
    with app_on_db(settings, redis_server, ACTIONS_DB) as url:
        yield url


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("viewer", password="viewer-pass")


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


LIVE_DB = 3


@pytest.fixture
def live_db():
    """The Redis database of live_setup; a test module overrides it to get one of its own."""
    return LIVE_DB


@pytest.fixture
def live_setup(settings, redis_server, live_db):
    """Monitored Redis, dashboard Redis and channel layer all on the (emptied) live database,
    with channels_redis exactly as configured in production (socket_timeout None)."""
    from channels.layers import channel_layers

    client = redis_server.client(live_db)
    client.flushdb()
    url = redis_server.url(live_db)
    point_at(settings, ConnectionSpec("default", url, ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = url
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [{"address": url, "socket_timeout": None}],
                                                      "prefix": "queuewatch:asgi"}}}
    channel_layers.backends.clear()
    yield client
    channel_layers.backends.clear()
    reset_registry()
    client.close()


@pytest.fixture
def running_monitor(live_setup):
    """A leading monitor in a thread of the test process, with a short tick."""
    import threading

    from dashboard.live.monitor import Monitor

    stop = threading.Event()
    monitor = Monitor(tick=0.5, name="test-monitor")
    thread = threading.Thread(target=monitor.run, args=(stop,), daemon=True)
    thread.start()
    yield monitor
    stop.set()
    thread.join(15)
