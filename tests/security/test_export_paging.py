"""Exports page through a sorted set from the cursor's score, never by an offset from the start
of the range: ``ZRANGEBYSCORE … LIMIT offset`` walks ``offset`` entries inside Redis, so with
offsets from the start a 1,000,000-job export cost O(N²) and never finished. Read from what
Redis itself received (``MONITOR``), not from timing."""
# Literal `bull:` keys kept: a redis-server of this test's own, shared with nobody.

from __future__ import annotations

import json
import threading

from queues.keys import QueueRef
from queues.redact import Redactor
from queues.redis.export import iter_jobs_jsonl
from queues.selection import JobFilter
from tests.support.servers import RedisServer

JOBS = 3000


def test_every_page_starts_at_the_cursor_with_a_small_offset():
    server = RedisServer()
    try:
        r = server.client()
        pipe = r.pipeline(transaction=False)
        for n in range(JOBS):
            pipe.hset(f"bull:deep:{n}", mapping={"name": "x", "data": "{}", "finishedOn": 1000 + n // 2, "atm": 1})
            pipe.zadd("bull:deep:failed", {str(n): 1000 + n // 2})  # pairs share a score
        pipe.execute()

        seen, ready = [], threading.Event()

        def watch():
            with server.client().monitor() as m:
                ready.set()
                for cmd in m.listen():
                    seen.append(cmd["command"])
                    if cmd["command"].startswith("ECHO done"):
                        return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        ready.wait(10)
        lines = "".join(
            iter_jobs_jsonl(
                r,
                queue=QueueRef("default", "bull", "deep"),
                filt=JobFilter(state="failed"),
                before_ms=10**13,
                redactor=Redactor(),
            )
        ).splitlines()
        r.echo("done")
        watcher.join(10)
    finally:
        server.stop()

    assert [json.loads(line)["id"] for line in lines] == [str(n) for n in range(JOBS)]
    offsets = [int(c.split()[-2]) for c in seen if c.startswith("ZRANGEBYSCORE") and "LIMIT" in c]
    assert len(offsets) > 8  # many pages were read
    assert max(offsets) <= 2, offsets  # at most the members sharing the cursor's score


def test_pages_of_large_jobs_hold_about_the_page_budget():
    """Pages are sized by bytes too, from the jobs of the page before: after a first page of
    large jobs, each page reads about ``PAGE_BYTES`` of job fields, not ``MAX_PAGE`` jobs (which
    would be 250 x 200 KB here), so a download to a client that stopped reading holds about that
    much. A job larger than the others adds itself to its page (it is exported whole) and the
    next pages shrink to fit it."""
    from queues.redis.export import FIRST_PAGE, PAGE_BYTES, iter_record_pages

    blob = "y" * 200_000
    server = RedisServer()
    try:
        r = server.client()
        pipe = r.pipeline(transaction=False)
        for n in range(60):
            data = json.dumps({"blob": blob * (4 if n == 40 else 1)})  # one job above the budget
            pipe.hset(f"bull:wide:{n}", mapping={"name": "x", "data": data, "finishedOn": 1000 + n, "atm": 1})
            pipe.zadd("bull:wide:failed", {str(n): 1000 + n})
        pipe.execute()
        pages = list(
            iter_record_pages(
                r,
                queue=QueueRef("default", "bull", "wide"),
                filt=JobFilter(state="failed"),
                before_ms=10**13,
                redactor=Redactor(),
            )
        )
    finally:
        server.stop()

    assert [record["id"] for page in pages for record in page] == [str(n) for n in range(60)]
    assert len(pages[0]) == FIRST_PAGE
    sizes = [[len(json.dumps(record["data"])) for record in page] for page in pages]
    for page in sizes[1:]:
        assert sum(page) - max(page) <= PAGE_BYTES, [len(p) for p in pages]
    # Two 200 KB jobs a page; the page after 40's (800 KB) holds one job, then two again.
    assert [len(p) for p in pages][1:] == [2] * 16 + [1] + [2] * 8 + [1]
    assert [r["id"] for r in pages[16]] == ["40", "41"] and [r["id"] for r in pages[17]] == ["42"]
