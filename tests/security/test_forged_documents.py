"""Someone who can write to the dashboard Redis forges the documents the monitor keeps there (the
published queue list, the workers and state documents, the stored health report), the way they
would with redis-cli. Pages ignore them, as if no monitor had written any; Queuewatch's own
documents still count."""

# Literal `bull:` keys kept: a redis-server of its own (server-wide commandstats, settings or key sets)

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from dashboard.health.checks import HEALTH_KEY, read_stored
from dashboard.live import channels as live
from queues.keys import QueueRef

pytestmark = pytest.mark.django_db

REAL = QueueRef("default", "bull", "real")


def make_queue(r, name: str) -> None:
    r.hset(f"bull:{name}:meta", mapping={"opts.maxLenEvents": 10000})


def test_a_forged_queue_list_is_ignored(private_redis, logged_in):
    make_queue(private_redis, "real")
    private_redis.set(dash_redis.QUEUE_LIST_KEY + "default", json.dumps([["bull", "phantom"]]))
    page = logged_in.get(reverse("overview")).content.decode()
    assert "phantom" not in page and "real" in page  # the page discovered the queues itself
    dash_redis.publish_queue_list(private_redis, "default", [REAL])  # the monitor's own still counts
    assert dash_redis.read_queue_list(private_redis, "default") == [REAL]


def test_forged_workers_state_and_health_documents_are_ignored(private_redis, logged_in):
    make_queue(private_redis, "real")
    now = int(time.time() * 1000)
    worker = {"name": "forged-worker", "addr": "10.6.6.6:1", "age_s": 1, "idle_s": 0, "client": ""}
    private_redis.set(
        dash_redis.WORKERS_KEY, json.dumps({"taken_at": now, "queues": {live.queue_id(REAL): [worker]}, "unknown": {}})
    )
    private_redis.set(
        state_store.STATE_KEY,
        json.dumps({"taken_at": now, "monitor": "forged-monitor", "connections": {}, "queues": []}),
    )
    private_redis.set(HEALTH_KEY, json.dumps({"checked_at": now, "connections": []}))
    assert state_store.read_state(private_redis) is None and read_stored(private_redis) is None
    page = logged_in.get(reverse("queue", args=["default", "bull", "real"])).content.decode()
    assert "forged-worker" not in page
    assert "forged-monitor" not in logged_in.get(reverse("health")).content.decode()
    assert read_stored(private_redis)["checked_at"] != now  # the health page stored a report of its own
    # A genuine document moved under another key is not accepted there either.
    dash_redis.publish_workers(private_redis, {"taken_at": now, "queues": {}, "unknown": {}}, every_s=10)
    private_redis.set(state_store.STATE_KEY, private_redis.get(dash_redis.WORKERS_KEY))
    assert state_store.read_state(private_redis) is None
    assert dash_redis.read_workers(private_redis) == {"taken_at": now, "queues": {}, "unknown": {}}


def test_forged_fields_of_the_state_hash_are_ignored(private_redis):
    """The state document is a hash, a signed field per queue: a field written by someone else,
    or a genuine entry copied under another queue's field, is left out; a hash without a genuine
    head reads as no document at all."""
    entry = {"connection": "default", "prefix": "bull", "name": "real", "counts": {"failed": 1}}
    state_store.publish_state(private_redis, {"taken_at": 1, "monitor": "m", "connections": {}, "queues": [entry]})
    real_field = state_store.entry_field(entry)
    phantom = QueueRef("default", "bull", "phantom")
    private_redis.hset(
        state_store.STATE_KEY, state_store.queue_field(phantom), json.dumps({**entry, "name": "phantom"})
    )
    private_redis.hset(
        state_store.STATE_KEY,
        state_store.field_of("default", "bull", "copy"),
        private_redis.hget(state_store.STATE_KEY, real_field),
    )
    assert [e["name"] for e in state_store.read_state(private_redis)["queues"]] == ["real"]
    assert state_store.read_state_entry(private_redis, phantom) is None
    assert state_store.read_state_entry(private_redis, REAL) == entry
    private_redis.hset(state_store.STATE_KEY, state_store.HEAD, json.dumps({"taken_at": 2, "monitor": "forged"}))
    assert state_store.read_state(private_redis) is None
    assert state_store.read_state_entry(private_redis, REAL) is None


def test_a_document_written_in_parts_is_the_one_written_whole(private_redis):
    """``DocumentStream`` (the health report's path: tens of megabytes at 10,000 queues, never
    whole in the process) signs exactly what ``put_document`` does, binding included; readers
    see the previous document until the commit, and no partial key is left behind."""
    from dashboard.core import fast_json, signing

    doc = {"queue": "رسائل / {tenant:7}", "n": [1, 2, 3]}
    dash_redis.put_document(private_redis, HEALTH_KEY, {"old": True}, ex=60)
    payload = fast_json.dumps_bytes(doc)
    assert "\\u" not in payload.decode()  # orjson writes UTF-8, not escapes
    stream = dash_redis.DocumentStream(private_redis, HEALTH_KEY, ex=60)
    for i in range(0, len(payload), 7):
        stream.write(payload[i : i + 7])
        assert read_stored(private_redis) == {"old": True}
    stream.commit()
    assert read_stored(private_redis) == doc
    assert (
        private_redis.get(HEALTH_KEY) == signing.sign(signing.DOCUMENT, payload.decode(), bound_to=HEALTH_KEY).encode()
    )
    assert 0 < private_redis.ttl(HEALTH_KEY) <= 60
    assert private_redis.keys(HEALTH_KEY + ":writing:*") == []
    # Another key's signature does not verify here: the binding holds for a streamed document.
    dash_redis.put_document(private_redis, "other", doc, ex=60)
    private_redis.set(HEALTH_KEY, private_redis.get("other"))
    assert read_stored(private_redis) is None

    abandoned = dash_redis.DocumentStream(private_redis, HEALTH_KEY, ex=60)
    abandoned.write(b'{"half":')
    abandoned.abandon()
    assert private_redis.keys(HEALTH_KEY + ":writing:*") == []
