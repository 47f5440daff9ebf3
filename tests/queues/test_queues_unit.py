"""The framework-free reader: configuration parsing, discovery, redaction, legacy schedulers."""
# Literal `bull:` keys kept: parse_job_key cases (no Redis); discovery across prefixes on a whole database.

from __future__ import annotations

import json

import pytest

from queues.connections import connection_specs_from_env, redact_url
from queues.errors import ConfigurationError
from queues.keys import parse_job_key
from queues.redact import Redactor
from queues.redis.discovery import discover_queue_names, glob_escape
from queues.redis.schedulers import is_legacy_key_shape, read_schedulers

pytestmark = pytest.mark.django_db


def test_default_connection_and_extra_connections_from_env(tmp_path):
    secret = tmp_path / "url"
    secret.write_text("rediss://app:s3cret@cache.example:6380/4\n")
    specs = connection_specs_from_env(
        {
            "QUEUEWATCH_REDIS_URL": "redis://default:pw@localhost:6379/0",
            "QUEUEWATCH_PREFIXES": "bull, {bull} ,app:bull",
            "QUEUEWATCH_CONNECTIONS": "orders,billing-eu",
            "QUEUEWATCH_REDIS_URL_ORDERS": "redis://localhost:6380/1",
            "QUEUEWATCH_REDIS_URL_BILLING_EU_FILE": str(secret),
        },
        default_url=None,
    )
    assert [s.name for s in specs] == ["default", "orders", "billing-eu"]
    assert specs[0].prefixes == ("bull", "{bull}", "app:bull")
    assert specs[1].prefixes == ("bull",)
    assert specs[2].url.startswith("rediss://app:s3cret@")
    assert "s3cret" not in repr(specs[2]) and "s3cret" not in specs[2].display_url


@pytest.mark.parametrize(
    "env, message",
    [
        ({"QUEUEWATCH_REDIS_URL": "http://x"}, "must be a redis://"),
        ({"QUEUEWATCH_CONNECTIONS": "orders"}, "QUEUEWATCH_URL_ORDERS is not set"),
        ({"QUEUEWATCH_CONNECTIONS": "Bad Name!"}, "not a valid connection name"),
        ({"QUEUEWATCH_REDIS_URL": "redis://x", "QUEUEWATCH_PREFIXES": " , "}, "names no prefix"),
    ],
)
def test_bad_configuration_fails_loudly(env, message):
    with pytest.raises(ConfigurationError, match=message):
        connection_specs_from_env(env, default_url=None)


def test_redact_url():
    assert redact_url("redis://user:pw@host:1/2") == "redis://user:***@host:1/2"
    assert redact_url("redis://:pw@host") == "redis://:***@host"
    assert redact_url("redis://host:6379") == "redis://host:6379"


def test_parse_job_key_prefers_longest_prefix_and_keeps_colons_in_ids():
    assert parse_job_key("app:bull:q:repeat:x:123", ["app", "app:bull"]) == ("app:bull", "q", "repeat:x:123")
    assert parse_job_key("other:q:1", ["bull"]) is None


def test_parse_job_key_resolves_a_known_queue_name_with_colons():
    # Python BullMQ accepts "orders:eu"; the key alone would read as queue "orders", id "eu:7".
    known = [("bull", "orders"), ("bull", "orders:eu"), ("other", "a:b")]
    assert parse_job_key("bull:orders:eu:7", ["bull"], known) == ("bull", "orders:eu", "7")
    assert parse_job_key("bull:orders:eu:repeat:x:1", ["bull"], known) == ("bull", "orders:eu", "repeat:x:1")
    assert parse_job_key("bull:orders:8", ["bull"], known) == ("bull", "orders", "8")
    # A name known under another prefix does not apply.
    assert parse_job_key("bull:a:b:1", ["bull"], known) == ("bull", "a", "b:1")
    assert parse_job_key("bull:orders:eu:", ["bull"], known) == ("bull", "orders", "eu:")


def test_glob_escape():
    assert glob_escape("a[1]*?") == r"a\[1\]\*\?"
    assert glob_escape("{bull}") == "{bull}"


def test_discovery_with_special_prefixes_and_noise(redis_client):
    # A whole database: discovery across several prefixes ('bull', '{app:bull}', 'we[ird]', 'bullx').
    r = redis_client
    for prefix, name in [("bull", "a"), ("bull", "b"), ("{app:bull}", "c"), ("we[ird]", "d")]:
        r.hset(f"{prefix}:{name}:meta", "opts.maxLenEvents", 10000)
    r.hset("bull:a:repeat:x:meta", "f", 1)  # a job id ending in ':meta', not a queue
    r.set("bull:z:meta", "a string")  # wrong type
    r.hset("bullx:y:meta", "f", 1)  # a different prefix
    assert discover_queue_names(r, "bull") == ["a", "b"]
    r.hset("bull:orders:eu:meta", "opts.maxLenEvents", 10000)  # a queue named with ':' (Python BullMQ)
    r.hset("bull:a:x:meta", mapping={"name": "j", "data": "{}", "opts": "{}", "timestamp": 1})  # job 'x:meta' of 'a'
    assert discover_queue_names(r, "bull") == ["a", "b", "orders:eu"]
    r.delete("bull:orders:eu:meta", "bull:a:x:meta")
    assert discover_queue_names(r, "{app:bull}") == ["c"]
    assert discover_queue_names(r, "we[ird]") == ["d"]
    r.delete("bull:b:meta")  # obliterated queues disappear
    assert discover_queue_names(r, "bull") == ["a"]


def test_redactor_walks_json_and_text():
    red = Redactor()
    data = {
        "password": "p",
        "nested": {"API_KEY": "k", "list": [{"x-auth-token": "t"}]},
        "tokenizer": "t2",
        "keep": "v",
    }
    out = red.value(data)
    assert out["password"] == out["nested"]["API_KEY"] == out["nested"]["list"][0]["x-auth-token"] == "[redacted]"
    assert out["keep"] == "v"
    text = red.text(json.dumps(data)[:60])  # truncated JSON cannot be parsed
    assert '"p"' not in text and "[redacted]" in text
    assert red.text('{"Authorization": "Bearer abc", "n": 1}') == '{"Authorization": "[redacted]", "n": 1}'
    assert Redactor(["ssn"]).value({"ssn": 1, "password": 2}) == {"ssn": "[redacted]", "password": 2}


def test_legacy_scheduler_detection_with_real_old_shape_keys(redis_prefix):
    r = redis_prefix.client
    q = redis_prefix.queue("legacy")
    # Pre-hash key shape: member encodes name:jobId:endDate:tz:pattern, no hash.
    r.zadd(q.key("repeat"), {"old-cron::::0 0 3 * * *": 1700000000000})
    # v5 hashed repeatable: md5 member, hash without 'ic'.
    r.zadd(q.key("repeat"), {"d9c48061d9d20cd7b1bf692d7ceb46ff": 1700000001000})
    r.hset(q.key("repeat:d9c48061d9d20cd7b1bf692d7ceb46ff"), mapping={"name": "legacy-every", "every": 5000})
    # A current v6 scheduler.
    r.zadd(q.key("repeat"), {"nightly": 1700000002000})
    r.hset(q.key("repeat:nightly"), mapping={"name": "n", "pattern": "0 3 * * *", "tz": "UTC", "ic": 4})
    items = {s.id: s for s in read_schedulers(r, q)}
    assert items["old-cron::::0 0 3 * * *"].legacy == "key-shape"
    assert items["old-cron::::0 0 3 * * *"].pattern == "0 0 3 * * *"
    assert items["d9c48061d9d20cd7b1bf692d7ceb46ff"].legacy == "v5-hash"
    assert items["d9c48061d9d20cd7b1bf692d7ceb46ff"].every == 5000
    assert items["nightly"].legacy == "" and items["nightly"].iterations == 4
    assert "upgrade" in items["old-cron::::0 0 3 * * *"].legacy_hint
    assert is_legacy_key_shape("name::1700000000000:Europe/Berlin:60000")
    assert not is_legacy_key_shape("my-scheduler")


def test_snapshot_reads_legacy_v5_paused_list_and_skips_markers(redis_prefix):
    from queues.redis.snapshot import read_snapshots

    r = redis_prefix.client
    q = redis_prefix.queue("v5")
    r.hset(q.key("meta"), "paused", 1)
    r.hset(q.key("1"), mapping={"name": "old", "timestamp": 1000})
    r.lpush(q.key("paused"), "1")
    r.lpush(q.key("wait"), "2")
    r.rpush(q.key("wait"), "0:123")  # v5 delay marker at the tail
    snap = read_snapshots(r, [q])[0]
    assert snap.counts["waiting"] == 1 and snap.legacy_paused_jobs == 1 and snap.paused  # apart, as getJobCounts()
    assert snap.oldest_waiting_id == "1" and snap.oldest_waiting_ts == 1000


def test_legacy_schedulers_are_flagged_on_the_page(logged_in, prefixed_queues):
    from django.urls import reverse

    r = prefixed_queues.client
    q = prefixed_queues.queue("legacy")
    r.hset(q.key("meta"), "opts.maxLenEvents", 10000)
    r.zadd(q.key("repeat"), {"old-cron::::0 0 3 * * *": 1700000000000})
    html = logged_in.get(reverse("schedulers")).content.decode()
    assert "badge legacy" in html and "BullMQ 6 throws on it" in html


def test_a_key_of_the_wrong_type_does_not_hide_the_other_queues(redis_prefix):
    from queues.redis.snapshot import read_snapshots

    r = redis_prefix.client
    weird, fine = redis_prefix.queue("weird"), redis_prefix.queue("fine")
    r.set(weird.key("completed"), "not a zset")
    r.zadd(fine.key("failed"), {"1": 1})
    snaps = read_snapshots(r, [weird, fine])
    assert snaps[0].counts["completed"] == 0 and snaps[1].counts["failed"] == 1
    assert r.ping()  # the pooled connection is still in sync
    assert read_snapshots(r, [fine])[0].counts["failed"] == 1


def test_a_job_pushed_back_to_the_tail_of_wait_neither_hides_the_oldest_nor_passes_for_exact(redis_prefix):
    from queues.redis.snapshot import read_snapshots

    r = redis_prefix.client
    q = redis_prefix.queue("limited")
    r.hset(q.key("old"), mapping={"timestamp": 1000, "opts": "{}"})
    r.hset(q.key("new"), mapping={"timestamp": 5000, "opts": "{}"})
    r.hset(q.key("back"), mapping={"timestamp": 500, "processedOn": 4000, "opts": "{}"})
    r.lpush(q.key("wait"), "old", "new")
    r.rpush(q.key("wait"), "back")  # moveJobFromActiveToWait: back in wait at an unstored time
    snap = read_snapshots(r, [q])[0]
    # Not its creation (500): the job read that surely waits longest is "old", and the pushed-back
    # job may have come back before it, so this is a bound.
    assert (snap.oldest_waiting_ts, snap.oldest_waiting_bound, snap.oldest_waiting_id) == (1000, True, "old")


def test_the_oldest_waiting_reads_the_other_ends_only_where_the_tail_of_wait_does_not_decide(redis_prefix):
    """A tail that never ran, was never delayed and is not lifo became ready before every job
    behind it: its queue's other ends are not read (a third of the reads at 10,000 queues); a
    queue whose tail ran reads them, and both answers are the ones every end read gives."""
    from queues.redis.snapshot import read_snapshots

    r = redis_prefix.client
    plain, back = redis_prefix.queue("plain"), redis_prefix.queue("pushed-back")
    for q in (plain, back):
        for job, ts in (("a", 1000), ("b", 2000), ("c", 3000)):
            r.hset(q.job_key(job), mapping={"timestamp": ts, "opts": "{}"})
        r.lpush(q.key("wait"), "a", "b", "c")  # "a" is the tail
    r.hset(back.job_key("a"), "processedOn", 4000)  # it ran: back at an unstored time
    r.config_resetstat()
    snaps = read_snapshots(r, [plain, back])
    hmgets = r.info("commandstats")["cmdstat_hmget"]["calls"]
    assert [(s.oldest_waiting_ts, s.oldest_waiting_bound, s.oldest_waiting_id) for s in snaps] == [
        (1000, False, "a"),
        (2000, True, "b"),  # "b" surely waited longest of what was read; "a" may have come back before
    ]
    # plain: its tail; pushed-back: its tail, then "b" and "c" (also its head). Every end: 3 + 3.
    assert hmgets == 1 + 1 + 2
