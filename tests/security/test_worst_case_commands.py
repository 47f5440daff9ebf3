"""The worst-case Redis commands per request that README.md and docs/operations.md state, counted
with the monitored Redis's own command statistics (a redis-server of this module's own; the
dashboard Redis is another server, so only what reaches the monitored Redis is counted)."""
# Literal `bull:` keys kept: redis-servers of the test's own (commandstats count only its requests).

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.core.dash_redis import publish_queue_list
from queues.keys import QueueRef
from tests.support.servers import RedisServer

pytestmark = pytest.mark.django_db
JOBS = 1200  # more than the biggest page (200) and than two export pages
ARGS = ["default", "bull", "wc"]


@pytest.fixture
def monitored(settings):
    from channels.layers import channel_layers

    from queues.connections import ConnectionSpec
    from tests.support.redis_db import point_at

    monitored_server, dashboard_server = RedisServer(), RedisServer()
    point_at(settings, ConnectionSpec("default", monitored_server.url(0), ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = dashboard_server.url(0)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    r = monitored_server.client(0)
    pipe = r.pipeline(transaction=False)
    pipe.hset("bull:wc:meta", mapping={"opts.maxLenEvents": 10000})
    for n in range(JOBS):
        pipe.hset(
            f"bull:wc:{n}",
            mapping={
                "name": f"job-{n % 7}",
                "data": json.dumps({"n": n}),
                "timestamp": n,
                "finishedOn": n,
                "failedReason": "boom",
                "atm": 1,
            },
        )
        pipe.zadd("bull:wc:failed", {str(n): n})
        pipe.rpush("bull:wc:wait", f"w{n}")
    pipe.rpush("bull:wc:0:logs", *[f"line {i}" for i in range(2000)])
    pipe.execute()
    # What a running monitor publishes: requests read it and never discover themselves.
    publish_queue_list(dashboard_server.client(0), "default", [QueueRef("default", "bull", "wc")])
    yield r
    r.close()
    from dashboard.connections.registry import reset_registry

    reset_registry()
    channel_layers.backends.clear()
    monitored_server.stop()
    dashboard_server.stop()


SETUP = {"hello", "client|setname", "ping"}  # a new connection's handshake, not the request's work


def commands(r, call) -> tuple[object, dict[str, int]]:
    r.config_resetstat()
    response = call()
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    stats = r.info("commandstats")
    return response, {
        k[len("cmdstat_") :]: v["calls"]
        for k, v in stats.items()
        if k not in ("cmdstat_info", "cmdstat_config|resetstat") and k[len("cmdstat_") :] not in SETUP
    }


EXPORT_PAGES = 9  # 10, 20, 40, 80, 160, 250, 250, 250, then the last 140 of 1,200
# What README.md ("What a request costs Redis") states, for one queue and these jobs.
STATED = {
    "overview": (lambda: reverse("overview"), 23),  # 21 per queue + MULTI/EXEC per 250 queues
    "api queues": (lambda: reverse("api_queues"), 23),
    "api queue": (lambda: reverse("api_queue", args=ARGS), 26),
    # The page's share, plus its "Priorities and limits" box: 7 reads without prioritized jobs.
    "failed page of 200": (lambda: reverse("queue", args=ARGS) + "?state=failed&size=200", 26 + 200 + 7),
    "deep waiting page of 200": (lambda: reverse("queue", args=ARGS) + "?state=waiting&size=200&page=5", 26 + 200 + 7),
    "api queue with figures": (lambda: reverse("api_queue", args=ARGS) + "?figures=1", 26 + 7),
    "api jobs, 200": (lambda: reverse("api_jobs", args=ARGS) + "?state=failed&size=200", 3 + 200),
    "job page": (lambda: reverse("job", args=[*ARGS, "0"]), 15),
    "api job": (lambda: reverse("api_job", args=[*ARGS, "0"]), 15),
    "unknown queue": (lambda: reverse("queue", args=["default", "bull", "nope"]), 1),
    "export": (lambda: reverse("api_export", args=ARGS) + "?state=failed&format=jsonl", JOBS + 3 * EXPORT_PAGES),
    "find by id": (lambda: reverse("find") + "?find=0&list=1", 1),  # one EXISTS per queue seen
    # One HGET per job examined (all 1,200: under QUEUEWATCH_SCAN_SAMPLE), a range read per page
    # (pages grow 10, 20, 40 … 250: at most 12 here), the length, one HMGET per match.
    "find by data": (lambda: reverse("queue_find", args=ARGS) + "?state=failed&where=n%20%3D%205", JOBS + 15),
}


def test_each_request_stays_within_what_the_readme_states(monitored, logged_in):
    over = {}
    for what, (url, bound) in STATED.items():
        response, used = commands(monitored, lambda url=url: logged_in.get(url()))
        assert response.status_code == (404 if what == "unknown queue" else 200), what
        if sum(used.values()) > bound:
            over[what] = (sum(used.values()), bound, used)
        assert "scan" not in used and "keys" not in used, what
    assert not over, {k: v[:2] for k, v in over.items()}


def test_a_bulk_preview_examines_at_most_the_scan_sample(monitored, client, settings):
    """A filter that reads the jobs (a name, a failure reason, or a waiting, delayed or
    prioritized state) is previewed over at most QUEUEWATCH_SCAN_SAMPLE jobs, and says so; the
    task itself goes through them all."""
    from tests.support.accounts import user_with

    settings.QUEUEWATCH_SCAN_SAMPLE = 300
    client.force_login(user_with("operator"))
    url = reverse("bulk_preview", args=ARGS)
    for params, per_job in (
        ({"action": "retry", "state": "failed", "reason_contains": "boom"}, 2),  # HMGET + HGET
        ({"action": "discard", "state": "failed", "name": "job-3"}, 1),
        ({"action": "discard", "state": "waiting"}, 1),
    ):
        response, used = commands(
            monitored, lambda params=params: client.post(url, {**params, "scope": "matching"}, HTTP_HX_REQUEST="true")
        )
        html = response.content.decode()
        assert response.status_code == 200 and "Matches among the first 300 of the 1200" in html, params
        assert sum(used.values()) <= 300 * per_job + 20, (params, used)
    body = client.post(
        reverse("api_bulk_preview", args=ARGS),
        json.dumps({"action": "retry", "state": "failed", "name": "job-3"}),
        content_type="application/json",
    ).json()
    assert (body["complete"], body["examined"], body["in_state"]) == (False, 300, 1200)
    assert body["count"] == len([n for n in range(300) if n % 7 == 3])  # the oldest 300, by finish time
    # A job that matches only beyond the examined ones: the preview cannot see it, but it still
    # offers the task, which goes through the whole state.
    monitored.hset(
        "bull:wc:late", mapping={"name": "late-one", "timestamp": 1, "finishedOn": 5000, "failedReason": "x"}
    )
    monitored.zadd("bull:wc:failed", {"late": 5000})
    late = client.post(
        url, {"action": "retry", "state": "failed", "name": "late-one", "scope": "matching"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Matches among the first 300 of the 1201 failed jobs: 0." in late
    assert "Nothing to do" not in late and "Confirm: retry all matching jobs" in late
    whole = client.post(
        reverse("api_bulk_preview", args=ARGS),
        json.dumps({"action": "retry", "state": "failed"}),
        content_type="application/json",
    ).json()
    assert (whole["complete"], whole["count"]) == (True, 1201)  # no job condition: one ZCOUNT, exact


FLOW_BOUND = 4050  # README.md: 19 per node read (at most 200), 43 to find the root, an HGET per completed node


def test_the_flow_page_reads_at_most_its_node_budget(monitored, logged_in):
    """A flow bigger than every bound (30 children of 30 children each, the job asked for at the
    bottom): the page and the API read at most 200 nodes, and say how many they do not show."""
    pipe = monitored.pipeline(transaction=False)
    pipe.hset("bull:wc:root", mapping={"name": "root", "timestamp": 1})
    pipe.zadd("bull:wc:waiting-children", {"root": 1})
    for c in range(30):
        pipe.hset(f"bull:wc:c{c}", mapping={"name": "child", "timestamp": 1, "parentKey": "bull:wc:root"})
        pipe.sadd("bull:wc:root:dependencies", f"bull:wc:c{c}")
        pipe.zadd("bull:wc:waiting-children", {f"c{c}": 1})
        for g in range(30):
            pipe.hset(f"bull:wc:g{c}-{g}", mapping={"name": "grandchild", "timestamp": 1, "parentKey": f"bull:wc:c{c}"})
            pipe.sadd(f"bull:wc:c{c}:dependencies", f"bull:wc:g{c}-{g}")
            pipe.rpush("bull:wc:wait", f"g{c}-{g}")
    pipe.execute()
    for url in (reverse("job_flow", args=[*ARGS, "g0-0"]), reverse("api_job_flow", args=[*ARGS, "g0-0"])):
        response, used = commands(monitored, lambda url=url: logged_in.get(url))
        assert response.status_code == 200
        assert sum(used.values()) <= FLOW_BOUND, used
    tree = response.json()
    assert tree["nodes_read"] == 200 and tree["budget_spent"]
    assert tree["root"]["not_shown"] == 10 and len(tree["root"]["children"]) == 20
