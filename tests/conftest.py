"""Shared fixtures. One redis-server is started for the session on a free port (each
pytest-xdist worker is a session of its own, with its own server). A test isolates
its keys either by a key prefix of its own on database 0 (``redis_prefix``) or, when something
reads the whole keyspace (a monitor, the channel layer), by a database leased for it from one
allocator (``redis_db`` and the fixtures built on it). See docs/testing.md."""

from __future__ import annotations

import pytest

from dashboard.connections.registry import reset_registry
from queues.connections import ConnectionSpec
from tests.support.live import monitor_thread
from tests.support.parallel import pytest_addoption, pytest_xdist_auto_num_workers  # noqa: F401  (hooks)
from tests.support.redis_db import (
    SHARED_DB,
    DatabaseAllocator,
    PrefixedRedis,
    app_on,
    delete_prefixed,
    point_at,
    prefix_for,
)
from tests.support.servers import RedisServer, run_node


def uses_django_database(item) -> tuple[bool, bool]:
    """Whether the test uses Django's database (pytest-django's ways in: the django_db marker,
    or a fixture needing it, such as db, transactional_db, admin_client: all request
    ``_django_db_helper``), and whether it commits (other connections, such as the monitor's
    threads, then see its rows)."""
    fixtures = getattr(item, "fixturenames", ())
    marker = item.get_closest_marker("django_db")
    uses = marker is not None or "_django_db_helper" in fixtures
    commits = (marker is not None and bool(marker.kwargs.get("transaction"))) or "transactional_db" in fixtures
    return uses, commits


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks the tests using Django's database ``database`` (and those committing also
    ``transactional_database``) before ``-m`` selects: the PostgreSQL pass of ./dev test selects
    by them (docs/testing.md, "Two databases")."""
    for item in items:
        uses, commits = uses_django_database(item)
        if uses:
            item.add_marker(pytest.mark.database)
        if commits:
            item.add_marker(pytest.mark.transactional_database)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database; on PostgreSQL, before it is dropped, the connections
    still open on it are ended: threads the tests ran (monitors, senders) keep theirs (as in
    production, until their process exits), and PostgreSQL refuses to drop a database in use."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture(scope="session")
def postgres_server():
    """A private PostgreSQL for the session (one per pytest-xdist worker), started on first use
    (tests/support/postgres.py). Tests using it are marked ``postgres``."""
    from tests.support.postgres import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def postgres_db(request, postgres_server):
    """A database of this test's own on the session's PostgreSQL (``.name``, ``.url``), dropped
    after the test."""
    from tests.support.postgres import ScratchDatabase

    name = "t_" + prefix_for(request.node.nodeid).replace("-", "_").lower()
    database = ScratchDatabase(name, postgres_server.create_database(name))
    yield database
    postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster():
    """A private Redis Cluster (3 primaries, 3 replicas) for the session; ``.url`` is its
    ``redis+cluster://`` connection URL. Tests that use it are marked ``cluster``."""
    from tests.support.redis_cluster import RedisCluster

    cluster = RedisCluster()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def redis_sentinel():
    """A private primary, replica and three Sentinels (``mymaster``) for the session;
    ``.url()`` is its ``redis+sentinel://`` connection URL. Tests that use it are marked
    ``sentinel``; a test that fails the primary over starts a set of its own."""
    from tests.support.redis_sentinel import RedisSentinelSet

    sentinels = RedisSentinelSet()
    yield sentinels
    sentinels.stop()


@pytest.fixture(scope="session")
def redis_databases(redis_server):
    """The one allocator of whole databases (1..15); ``with redis_databases.lease() as db:``
    gives a test a second database of its own."""
    return DatabaseAllocator(redis_server.port)


@pytest.fixture
def redis_db(redis_databases):
    """A whole database leased to this test (emptied before and after)."""
    with redis_databases.lease() as db:
        yield db


@pytest.fixture
def redis_prefix(request, redis_server):
    """This test's own BullMQ key prefix on database 0 (``bull-<hash of the test id>``); its keys
    are deleted before and after."""
    prefix = prefix_for(request.node.nodeid)
    client = redis_server.client(SHARED_DB)
    delete_prefixed(client, prefix)  # left over by an interrupted run
    try:
        yield PrefixedRedis(prefix, redis_server.url(SHARED_DB), client)
    finally:
        delete_prefixed(client, prefix)
        client.close()


@pytest.fixture
def redis_client(redis_db):
    """A client on this test's own (emptied) database; its URL is ``redis_url``."""
    client = redis_db.client()
    yield client
    client.close()


@pytest.fixture
def redis_url(redis_db):
    return redis_db.url


@pytest.fixture(scope="session")
def node_fixture_db(redis_databases):
    """The database holding the Node-built queues of ``bullmq_fixture``, for the whole session."""
    with redis_databases.lease() as db:
        yield db


@pytest.fixture(scope="session")
def bullmq_fixture(node_fixture_db):
    """Queues built by real Node BullMQ 6 (tests/node/build_fixture.mjs), once per session.
    Returns what Node itself reported: getJobCounts() per queue and job details."""
    return run_node("build_fixture.mjs", node_fixture_db.url)


@pytest.fixture
def node_fixture_client(node_fixture_db):
    """A client on the Node-built queues' database (shared by the session: change nothing
    another test relies on, or undo it)."""
    client = node_fixture_db.client()
    yield client
    client.close()


@pytest.fixture
def node_queues(settings, node_fixture_db, bullmq_fixture):
    """The app pointed at the Node-built queues (prefixes 'bull' and '{app:bull}')."""
    point_at(settings, ConnectionSpec("default", node_fixture_db.url, ("bull", "{app:bull}")))
    yield bullmq_fixture
    reset_registry()


@pytest.fixture
def scratch_queues(settings, redis_url, redis_client):
    """The app pointed at this test's (emptied) database, prefix 'bull'; yields its client."""
    with app_on(settings, redis_url):
        yield redis_client


@pytest.fixture
def prefixed_queues(settings, redis_prefix):
    """The app pointed at this test's own key prefix on database 0; yields the ``PrefixedRedis``
    (build keys from ``.queue(name)``, URL arguments from ``.args(name)``). Database 0 is also
    the dashboard Redis of these tests: each starts with no download slot held by a user id an
    earlier test's unfinished export left (a new test's users reuse the same ids)."""
    from dashboard.web.download_slots import KEY_PREFIX

    def free_download_slots() -> None:
        for key in redis_prefix.client.scan_iter(match=f"{KEY_PREFIX}*"):
            redis_prefix.client.delete(key)

    free_download_slots()
    point_at(settings, redis_prefix.spec())
    yield redis_prefix
    reset_registry()
    free_download_slots()


@pytest.fixture
def actions_redis(settings, redis_url):
    """The app pointed at this test's (emptied) database, prefix 'bull'; yields its URL."""
    with app_on(settings, redis_url) as url:
        yield url


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("viewer", password="viewer-pass")


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def live_setup(settings, redis_db):
    """Monitored Redis, dashboard Redis and channel layer all on this test's (emptied) database,
    with the channel layer exactly as configured in production (sealed, socket_timeout None). The monitor
    discovers every queue and keeps unprefixed keys, hence a whole database. Its URL is
    ``redis_url``."""
    from channels.layers import channel_layers as layers

    from dashboard.core.channel_layer import channel_layers

    client = redis_db.client()
    point_at(settings, ConnectionSpec("default", redis_db.url, ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    settings.CHANNEL_LAYERS = channel_layers(redis_db.url, settings.SECRET_KEY)
    layers.backends.clear()
    yield client
    layers.backends.clear()
    reset_registry()
    client.close()


@pytest.fixture
def running_monitor(live_setup):
    """A leading monitor in a thread of the test process, with a short tick."""
    with monitor_thread(tick=0.5, name="test-monitor") as monitor:
        yield monitor


@pytest.fixture
def private_redis(settings):
    """The app pointed at a redis-server of this test's own (monitored and dashboard Redis,
    prefix 'bull', in-memory channel layer): commandstats then count only what the code under
    test did — the session's shared server also serves other tests' leftover threads."""
    from channels.layers import channel_layers

    server = RedisServer()
    url = server.url(0)
    point_at(settings, ConnectionSpec("default", url, ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = url
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    client = server.client(0)
    yield client
    client.close()
    reset_registry()
    channel_layers.backends.clear()
    server.stop()


@pytest.fixture
def smtp(settings):
    """A real SMTP receiver on loopback (tests/support/receivers.py), with Django's email
    settings pointed at it."""
    from tests.support.receivers import SmtpReceiver

    server = SmtpReceiver()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.DEFAULT_FROM_EMAIL = "queuewatch@example.test"
    settings.QUEUEWATCH_BASE_URL = "https://qw.example.test"
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def every_language_rendered():
    """A monitor run in-process narrows the languages live fragments are rendered in
    (``fragments.only_render``, a process-wide setting); put it back, so a later test that
    renders a fragment does not depend on which monitor test ran before it."""
    yield
    from dashboard.live import fragments

    fragments.only_render(None)
