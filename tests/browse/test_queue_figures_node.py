"""Queue figures against real Node BullMQ 6.7: jobs per priority equal Queue.getCountsPerPriority,
the "maxed" badge when active reaches the global concurrency, the current rate-limit window, and
BullMQ's own metrics on the history charts equal to Queue.getMetrics, minute by minute."""

from __future__ import annotations

import re
import time

import pytest
from django.urls import reverse

from dashboard.browse import figures as browse_figures
from queues.figures import PRIORITIES_SHOWN, PRIORITY_SCORE_FACTOR
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.node,
    pytest.mark.django_db,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]


@pytest.fixture(autouse=True)
def node_tz(monkeypatch):
    """Node runs 5:45 off UTC: a minute read in local time instead of UTC would show."""
    monkeypatch.setenv("TZ", "Asia/Kathmandu")


@pytest.fixture(autouse=True)
def fresh_metrics_cache():
    browse_figures._cache.clear()
    yield
    browse_figures._cache.clear()


def flat(html: str) -> str:
    return " ".join(html.split())


def shown_priorities(page: str) -> dict[int, int]:
    found = re.findall(r'data-priority="(\d+)">[^<]*<strong><data class="qw-num" value="(\d+)"', page)
    return {int(p): int(n) for p, n in found}


def test_priorities_maxed_and_rate_window_equal_node(logged_in, prefixed_queues):
    q = prefixed_queues
    truth = run_node("figures.mjs", q.url, "prio", "priorities", prefix=q.prefix)
    page = flat(logged_in.get(reverse("queue", args=q.args("prio"))).content.decode())
    # getCountsPerPriority([0, 1, 5, 1000, 7]): two plain jobs left waiting (two are active).
    assert truth["counts"] == {"0": 2, "1": 3, "5": 2, "1000": 1, "7": 0}
    # Only the priorities present are listed (7 has no job), each with Node's count.
    assert shown_priorities(page) == {int(p): n for p, n in truth["counts"].items() if n}
    assert "no priority (waiting)" in page and "priority 1000:" in page
    # Active 2 of a global concurrency of 2: BullMQ's isMaxed.
    assert truth["active"] == 2 and truth["concurrency"] == 2
    assert "figure-maxed" in page
    two = '<data class="qw-num" value="2">2</data>'
    assert f'figure-concurrency">{two} / {two}' in page
    # The window: the limiter counts the 2 jobs started, for the rest of the minute.
    assert truth["limiter"] == 2 and truth["rateLimitTtl"] == 0
    assert "5 jobs per 1 min" in page
    assert "2 of 5 jobs started, the window ends in" in page
    assert "figure-limited" not in page  # 2 < 5: not limited (getRateLimitTtl(5) is 0)


def test_priorities_beyond_the_shown_bound_are_one_remainder(logged_in, prefixed_queues):
    q = prefixed_queues
    many = q.queue("many")
    q.client.hset(many.key("meta"), "opts.maxLenEvents", 10000)
    members = {f"j{p}": p * PRIORITY_SCORE_FACTOR + p for p in range(1, PRIORITIES_SHOWN + 6)}
    q.client.zadd(many.key("prioritized"), members)
    page = flat(logged_in.get(reverse("queue", args=q.args("many"))).content.decode())
    assert shown_priorities(page) == {0: 0, **{p: 1 for p in range(1, PRIORITIES_SHOWN + 1)}}
    assert re.search(r'figure-priorities-rest"><data class="qw-num" value="5">5</data> more in lower priorities', page)


def test_bullmq_metrics_on_the_history_equal_get_metrics(logged_in, prefixed_queues):
    q = prefixed_queues
    truth = run_node("figures.mjs", q.url, "measured", "metrics", prefix=q.prefix, timeout=120)
    body = logged_in.get(reverse("queue_history", args=q.args("measured")) + "?range=1h").json()
    assert body["bullmq_metrics"] == {"offered": True, "recorded": True}
    by_minute = {kind: dict(zip(body["t"], body[f"bullmq_{kind}"], strict=True)) for kind in ("completed", "failed")}
    for kind in ("completed", "failed"):
        got = truth[kind]
        current = got["meta"]["prevTS"] // 60000
        # Queue.getMetrics' data, newest first: entry i is the minute before prevTS's, minus i.
        for i, value in enumerate(got["data"]):
            assert by_minute[kind][(current - 1 - i) * 60] == value, (kind, i)
        # prevTS's own minute is still filling: count - prevCount so far.
        assert by_minute[kind][current * 60] == got["meta"]["count"] - got["meta"]["prevCount"]
    # What the script did: 3, 0, 2, 1 completed over four minutes, then 1 in this one.
    now_min = int(time.time()) // 60
    series = [by_minute["completed"].get((now_min - k) * 60) for k in (4, 3, 2, 1, 0)]
    assert series == [3, 0, 2, 1, 1]
    assert sum(v or 0 for v in body["bullmq_failed"]) == 1


def test_history_without_bullmq_metrics_says_not_recorded(logged_in, prefixed_queues):
    q = prefixed_queues
    q.client.hset(q.queue("quiet").key("meta"), "opts.maxLenEvents", 10000)
    body = logged_in.get(reverse("queue_history", args=q.args("quiet")) + "?range=24h").json()
    assert body["bullmq_metrics"] == {"offered": True, "recorded": False}
    assert set(body["bullmq_completed"]) == {None}


def test_the_queue_api_gives_the_figures_when_asked(logged_in, prefixed_queues):
    q = prefixed_queues
    truth = run_node("figures.mjs", q.url, "prio", "priorities", prefix=q.prefix)
    url = reverse("api_queue", args=q.args("prio"))
    assert "figures" not in logged_in.get(url).json()  # not read unless asked for
    figures = logged_in.get(url + "?figures=1").json()["figures"]
    assert {str(p["priority"]): p["count"] for p in figures["per_priority"]} == {
        p: n for p, n in truth["counts"].items() if n
    }
    assert figures["maxed"] is True and figures["concurrency"] == 2 and figures["active"] == 2
    assert figures["rate_limit"] == {"max": 5, "duration_ms": 60_000}
    assert figures["window"]["count"] == 2 and figures["limited_for_ms"] == 0
