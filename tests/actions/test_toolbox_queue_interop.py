"""Edit-and-retry, queue settings, drain and obliterate against real Node BullMQ 6.7: the edited
job runs with its new data, a running Node worker obeys the global concurrency and rate limit we
set, and drain/obliterate leave exactly what Node's Queue.drain/Queue.obliterate leave. This
module runs its own redis-server."""
# Literal `bull:` keys kept: a redis-server of the module's own: whole key sets compared with Node's.

from __future__ import annotations

import json
import re

import pytest

from queues import edit_retry, queue_settings
from queues.redis import actions
from queues.redis import edit_retry as redis_edit_retry
from queues.redis import queue_settings as redis_queue_settings
from tests.support.servers import node_available
from tests.support.toolbox import node, q, r, server  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]


def test_an_edited_failed_job_runs_with_the_new_data_and_reset_counters(server, r):
    ids = node(
        server,
        "fail",
        "fix",
        json.dumps([{"name": "charge", "data": {"fail": 1, "card": {"n": "4111", "exp": "01/20"}}}]),
    )["ids"]
    job = ids[0]
    assert r.zscore(q("fix").key("failed"), job) is not None
    plan = redis_edit_retry.plan_edit(r, queue=q("fix"), job_id=job, patch={"fail": 0, "card": {"exp": "01/30"}})
    diff = plan.diff()
    # Keys in their stored order (as the pages show the data), the unchanged ones as context.
    assert {'-  "fail": 1,', '+  "fail": 0,', '-    "exp": "01/20"', '+    "exp": "01/30"'} <= set(diff)
    assert not any("4111" in line and line[0] in "+-" for line in diff)  # unchanged lines are context only
    result = redis_edit_retry.edit_and_retry(r, queue=q("fix"), plan=plan)
    assert result.outcome == "done", result.message
    assert r.hget(q("fix").job_key(job), "atm") is None
    done = node(server, "run", "fix", "1", "0")["jobs"][job]
    assert done["state"] == "completed" and done["data"] == {"fail": 0, "card": {"n": "4111", "exp": "01/30"}}
    assert done["atm"] == 1  # counters were reset: this is its first attempt since the edit


def test_edit_and_retry_refuses_stale_previews_and_non_failed_jobs(server, r):
    ids = node(server, "fail", "stale", json.dumps([{"name": "a", "data": {"v": 1}}, {"name": "b", "data": {"v": 1}}]))[
        "ids"
    ]
    plan = redis_edit_retry.plan_edit(r, queue=q("stale"), job_id=ids[0], patch={"v": 2})
    r.hset(q("stale").job_key(ids[0]), "data", json.dumps({"v": 5}))  # a producer changed it meanwhile
    assert redis_edit_retry.edit_and_retry(r, queue=q("stale"), plan=plan).outcome == "changed"
    assert json.loads(r.hget(q("stale").job_key(ids[0]), "data")) == {"v": 5}
    assert r.zscore(q("stale").key("failed"), ids[0]) is not None
    same = redis_edit_retry.plan_edit(r, queue=q("stale"), job_id=ids[1], patch={"v": 1})
    assert redis_edit_retry.edit_and_retry(r, queue=q("stale"), plan=same).outcome == "unchanged"
    assert redis_edit_retry.plan_edit(r, queue=q("stale"), job_id="nope", patch={}) is None
    r.hset(q("stale").job_key(ids[1]), "data", "{not json")
    with pytest.raises(edit_retry.PatchError):
        redis_edit_retry.plan_edit(r, queue=q("stale"), job_id=ids[1], patch={"v": 2})


def test_merge_patch_follows_rfc_7386():
    assert edit_retry.merge_patch({"a": "b", "c": {"d": "e", "f": "g"}}, {"a": "z", "c": {"f": None}}) == {
        "a": "z",
        "c": {"d": "e"},
    }
    assert edit_retry.merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}
    assert edit_retry.merge_patch([1], {"a": 1}) == {"a": 1}
    assert edit_retry.merge_patch({"a": 1}, "text") == "text"


def test_a_running_node_worker_obeys_global_concurrency(server, r):
    node(server, "dump", "conc")  # the queue exists
    redis_queue_settings.set_global_concurrency(r, queue=q("conc"), concurrency=2)
    assert redis_queue_settings.read_settings(r, queue=q("conc")).concurrency == 2
    out = node(server, "throughput", "conc", "8", "100")
    assert out["maxActive"] == 2  # the worker's own concurrency is 10
    redis_queue_settings.set_global_concurrency(r, queue=q("conc"), concurrency=None)
    assert redis_queue_settings.read_settings(r, queue=q("conc")).concurrency is None
    assert node(server, "throughput", "conc", "8", "100")["maxActive"] > 2


def test_a_running_node_worker_obeys_the_global_rate_limit(server, r):
    node(server, "dump", "rate")
    redis_queue_settings.set_global_rate_limit(r, queue=q("rate"), max_jobs=2, duration_ms=500)
    settings = redis_queue_settings.read_settings(r, queue=q("rate"))
    assert (settings.rate_max, settings.rate_duration_ms) == (2, 500)
    started = node(server, "throughput", "rate", "6", "1")["started"]
    assert started[-1] >= 900  # 6 jobs at 2 per 500 ms: the last starts in the third window
    r.set(q("rate").key("limiter"), 2, px=60000)  # as a worker's limiter leaves it mid-window
    assert redis_queue_settings.read_settings(r, queue=q("rate")).rate_limited
    assert redis_queue_settings.remove_rate_limit_key(r, queue=q("rate"))
    assert not redis_queue_settings.read_settings(r, queue=q("rate")).rate_limited
    redis_queue_settings.set_global_rate_limit(r, queue=q("rate"), max_jobs=None)
    assert r.hmget(q("rate").key("meta"), ["max", "duration"]) == [None, None]
    with pytest.raises(queue_settings.SettingRefused):
        redis_queue_settings.set_global_rate_limit(r, queue=q("rate"), max_jobs=0, duration_ms=10)


def timeless(text) -> str:
    """A scheduler iteration's id holds its time (``repeat:hourly:<ms>``), which differs between
    two queues filled a moment apart."""
    return re.sub(r"(repeat:hourly:)\d+", r"\1<ms>", text.decode() if isinstance(text, bytes) else text)


def dump(server, queue: str) -> dict:
    return {timeless(k): v for k, v in node(server, "dump", queue)["keys"].items()}


def filled_twins(server, *, paused: bool) -> None:
    for name in ("ours", "theirs"):
        node(server, "fill", name, "1" if paused else "0")


def as_ours(keys: dict) -> dict:
    """Node's dump of queue 'theirs' with its keys named as in queue 'ours'."""
    return {k.replace("bull:theirs:", "bull:ours:"): v for k, v in keys.items()}


def members(r, key: str) -> list:
    kind = r.type(key)
    if kind == b"zset":
        return sorted(timeless(m) for m in r.zrange(key, 0, -1))
    return sorted(timeless(m) for m in r.lrange(key, 0, -1)) if kind == b"list" else []


@pytest.mark.parametrize("delayed", [False, True])
def test_drain_leaves_exactly_what_node_drain_leaves(server, r, delayed):
    filled_twins(server, paused=False)
    theirs_before = redis_queue_settings.read_settings(r, queue=q("theirs")).counts
    removed = redis_queue_settings.drain(r, queue=q("ours"), delayed=delayed)
    node(server, "drain", "theirs", "1" if delayed else "0")
    assert dump(server, "ours") == as_ours(dump(server, "theirs"))
    for state in ("wait", "prioritized", "delayed", "completed", "failed", "repeat"):
        assert members(r, f"bull:ours:{state}") == members(r, f"bull:theirs:{state}"), state
    theirs_after = redis_queue_settings.read_settings(r, queue=q("theirs")).counts
    assert removed == sum(theirs_before[s] - theirs_after[s] for s in theirs_before) > 0
    assert theirs_after["delayed"] == (0 if delayed else theirs_before["delayed"])


def test_obliterate_leaves_exactly_what_node_obliterate_leaves(server, r):
    filled_twins(server, paused=False)
    with pytest.raises(queue_settings.SettingRefused, match="not paused"):
        redis_queue_settings.obliterate(r, queue=q("ours"))
    assert dump(server, "ours") == as_ours(dump(server, "theirs"))  # refused: nothing changed
    for name in ("ours", "theirs"):
        actions.queue_pause(r, queue=q(name), paused=True)
    before = redis_queue_settings.read_settings(r, queue=q("ours"))
    assert before.paused and before.total_jobs > 0 and before.counts["schedulers"] == 1
    redis_queue_settings.obliterate(r, queue=q("ours"))
    node(server, "obliterate", "theirs")
    assert dump(server, "ours") == as_ours(dump(server, "theirs")) == {}


def test_resume_over_a_long_legacy_paused_list_leaves_what_nodes_resume_leaves(server, r):
    # A v5 queue paused with 15,001 jobs in the legacy 'paused' list (moved 7,000 per script call).
    for name in ("legacy-ours", "legacy-node"):
        r.hset(q(name).key("meta"), mapping={"paused": 1, "opts.maxLenEvents": 10000})
        r.rpush(q(name).key("wait"), "w")
        r.rpush(q(name).key("paused"), *[str(i) for i in range(15_001)])
    actions.queue_pause(r, queue=q("legacy-ours"), paused=False)
    node(server, "resume", "legacy-node")
    for name in ("legacy-ours", "legacy-node"):
        assert (r.llen(q(name).key("paused")), r.llen(q(name).key("wait"))) == (0, 15_002)
        assert [f[b"event"] for _, f in r.xrange(q(name).key("events"))] == [b"resumed"], name
    assert r.lrange(q("legacy-ours").key("wait"), 0, -1) == r.lrange(q("legacy-node").key("wait"), 0, -1)
