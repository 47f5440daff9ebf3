"""A Redis node over TLS (``rediss://``) with a certificate authority of the test's own: the
source reads a queue's counts, the overview shows them, and a client trusting the wrong CA is
refused with a message that says the certificate could not be verified (the connection shown
as unavailable, not a server error)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queues.connections import ConnectionSpec
from queues.errors import SourceUnavailable
from queues.keys import QueueRef
from queues.sources.factory import source_for
from tests.support.redis_db import point_at
from tests.support.tls_redis import TlsRedisServer

PREFIX = "bull"
MAIL = QueueRef("default", PREFIX, "mail")
COUNTS = {"waiting": 3, "active": 0, "delayed": 1, "prioritized": 0, "waiting-children": 0, "completed": 2, "failed": 1}


@pytest.fixture(scope="module")
def tls_redis():
    server = TlsRedisServer()
    client = server.client()
    # BullMQ's layout, written by hand: what the snapshot reads.
    client.rpush(MAIL.key("wait"), "3", "4", "5")
    client.zadd(MAIL.key("delayed"), {"6": 1})
    client.zadd(MAIL.key("completed"), {"1": 1, "2": 2})
    client.zadd(MAIL.key("failed"), {"7": 3})
    client.hset(MAIL.key("meta"), mapping={"opts.maxLenEvents": "10000", "version": "bullmq:6.7.0"})
    client.close()
    yield server
    server.stop()


def test_the_source_reads_counts_over_tls(tls_redis):
    source = source_for(ConnectionSpec("default", tls_redis.url(), (PREFIX,)))
    try:
        with source.errors():
            assert source.discover() == [MAIL]
            [snapshot] = source.snapshots([MAIL])
        assert snapshot.counts == COUNTS
    finally:
        source.close()


def test_the_wrong_ca_is_refused_with_the_reason(tls_redis):
    source = source_for(ConnectionSpec("default", tls_redis.url(ca=tls_redis.wrong_ca_path), (PREFIX,)))
    try:
        with pytest.raises(SourceUnavailable) as refused, source.errors():
            source.discover()
    finally:
        source.close()
    assert "certificate verification failed" in str(refused.value)


@pytest.fixture
def tls_app(settings, tls_redis, redis_db):
    """The app on the TLS connection; its own (dashboard) Redis on the session's plain node."""
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    yield lambda url: point_at(settings, ConnectionSpec("default", url, (PREFIX,)))
    point_at(settings)


@pytest.mark.django_db
def test_the_overview_shows_the_counts_read_over_tls(logged_in, tls_app, tls_redis):
    tls_app(tls_redis.url())
    html = logged_in.get(reverse("overview")).content.decode()
    assert ">mail</a>" in html
    assert f'value="{COUNTS["waiting"]}">' in html


@pytest.mark.django_db
def test_the_overview_says_the_wrong_ca_leaves_the_connection_unavailable(logged_in, tls_app, tls_redis):
    tls_app(tls_redis.url(ca=tls_redis.wrong_ca_path))
    response = logged_in.get(reverse("overview"))
    assert response.status_code == 200
    html = response.content.decode()
    assert ">mail</a>" not in html
    assert "Cannot reach connection “default”: TLS certificate verification failed" in html
