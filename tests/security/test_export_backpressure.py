"""Downloads to a client that stops reading hold the web process's memory bounded.

An ASGI server whose ``send`` returns before the socket drains (daphne's) buffers a download
whole for a client that never reads: two stalled exports left hundreds of MB in the web
process. The server Queuewatch ships (``python -m dashboard.serve``) waits in ``send`` while the
socket's write buffer is full, so the export stops being read from Redis and the process holds
about one page per stalled download. With at most ``QUEUEWATCH_EXPORTS_PER_USER`` downloads per
user, that bounds the bytes one user keeps in flight.

Real stack: a private redis-server, the shipped server in a subprocess, a logged-in session,
raw sockets that send the request and then never read."""
# Literal `bull:` keys kept: a redis-server of the module's own, behind the shipped server.

from __future__ import annotations

import http.client
import http.cookiejar
import json
import re
import socket
import urllib.parse
import urllib.request

import pytest
from django.urls import reverse

from tests.support.browser import manage
from tests.support.servers import AppServer, RedisServer, app_env
from tests.support.waiting import wait_for

JOBS = 4000
BLOB = 8192  # characters of job data: the export is JOBS * ~8 KB = ~33 MB
QUEUE = ("default", "bull", "big")
MB = 1024 * 1024

pytestmark = pytest.mark.slow


def blob(i: int) -> str:
    # Distinct per job so a mix-up shows; plain letters so redaction leaves it alone.
    return (f"job{i:05d}" + "abcdefghijklmnopqrstuvwxyz" * (BLOB // 26 + 1))[:BLOB]


def seed(r) -> None:
    for start in range(0, JOBS, 500):
        pipe = r.pipeline(transaction=False)
        for i in range(start, min(JOBS, start + 500)):
            finished = 1_700_000_000_000 + i
            pipe.hset(
                f"bull:big:{i}",
                mapping={
                    "name": "bulky",
                    "data": json.dumps({"i": i, "blob": blob(i)}),
                    "timestamp": finished - 10,
                    "finishedOn": finished,
                    "failedReason": "boom",
                    "atm": 1,
                },
            )
            pipe.zadd("bull:big:failed", {str(i): finished})
        pipe.execute()
    r.hset("bull:big:meta", mapping={"opts.maxLenEvents": 10000})


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024


def log_in(base: str, username: str, password: str) -> str:
    """The session cookie, got through the login form as a browser gets it."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    html = opener.open(base + "/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": username, "password": password})
    opener.open(
        urllib.request.Request(base + "/login/", data=body.encode(), headers={"Referer": base + "/login/"}),
        timeout=30,
    ).read()
    return next(c.value for c in jar if c.name == "sessionid")


EXPORT = reverse("queue_export", args=QUEUE) + "?state=failed&format=jsonl"


def stalled_export(port: int, session: str) -> socket.socket:
    """A client that sends the export request and never reads (a small receive buffer, so the
    kernel holds little of it either)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"GET {EXPORT} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: sessionid={session}\r\n\r\n".encode("ascii")
    )
    return sock


def export_status(port: int, session: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", EXPORT, headers={"Cookie": f"sessionid={session}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def job_reads(r) -> int:
    """HMGETs the monitored Redis served: the exporter reads each exported job with one."""
    return int(r.info("commandstats").get("cmdstat_hmget", {}).get("calls", 0))


def steady(read, polls: int = 5):
    """Wait until ``read()`` gives the same value ``polls`` times in a row (0.2 s apart)."""
    seen: list = []

    def settled():
        seen.append(read())
        return len(seen) >= polls and len(set(seen[-polls:])) == 1 and seen[-1]

    wait_for(settled, timeout=90, interval=0.2)
    return seen[-1]


@pytest.fixture(scope="module")
def big_export(tmp_path_factory):
    redis_server = RedisServer()
    seed(redis_server.client())
    env = app_env(
        redis_url=redis_server.url(),
        dashboard_url=redis_server.url(1),
        database=str(tmp_path_factory.mktemp("backpressure") / "db.sqlite3"),
    )
    manage(env, "migrate", "-v0")
    username, password = manage(env, "demo_user", "--username", "exporter").split(" / ")
    web = AppServer(env, timeout=30)
    yield web, redis_server, log_in(web.url, username, password)
    web.stop()
    redis_server.stop()


def test_stalled_exports_hold_memory_bounded_and_release_it(big_export):
    web, redis_server, session = big_export
    monitored = redis_server.client()

    # A reading client gets the whole file, in order, intact (and the process is warmed up).
    status, body = export_status(web.port, session)
    assert status == 200
    lines = body.splitlines()
    whole = len(body)
    assert whole > 30 * MB
    assert len(lines) == JOBS
    for i in (0, 1, JOBS // 2, JOBS - 1):
        record = json.loads(lines[i])
        assert record["id"] == str(i) and record["data"] == {"i": i, "blob": blob(i)}
    assert [json.loads(line)["id"] for line in lines] == [str(i) for i in range(JOBS)]
    before = rss(web.proc.pid)

    settled = []  # RSS after each round's release
    for _round in range(3):  # later rounds show nothing stayed behind from the earlier ones
        reads_before = job_reads(monitored)
        clients = [stalled_export(web.port, session), stalled_export(web.port, session)]
        try:
            # Both exports run until the sockets are full, then stop reading Redis: the count
            # of jobs read settles far below the two exports' 2 * JOBS.
            read = steady(lambda: job_reads(monitored)) - reads_before
            assert 0 < read < JOBS // 2, f"the exporter read {read} jobs for two stalled clients"
            held = rss(web.proc.pid) - before
            # Two stalled exports of ~33 MB each (~66 MB that a buffering server keeps): the web
            # process holds about a page each, and less than one export's worth for both (under a
            # loaded test run the allocator's arenas add some: 18 MB was seen).
            assert held < whole, f"web process grew by {held / MB:.0f} MB for two stalled exports"
            # Both still hold their download slot: a third is refused (429) while they stall.
            assert export_status(web.port, session)[0] == 429
        finally:
            for sock in clients:
                sock.close()
        # Released on disconnect: the user's slots come back and a reading client gets the
        # whole export again, with the process no bigger than while the two stalled.
        status, body = wait_for(lambda: (r := export_status(web.port, session))[0] == 200 and r, timeout=30)
        assert len(body) == whole
        # After the full re-read the allocator may keep some of a page's worth per export, so
        # the release is judged across rounds. What stays behind from a round would show in every
        # round's growth; the allocator's settling (arenas of the server's threads, ~9 MB seen
        # once) shows in one round at most, so the smaller of the later rounds' growths is judged.
        settled.append(rss(web.proc.pid))
    growth = min(settled[1] - settled[0], settled[2] - settled[1])
    assert growth < whole // 4, f"grew by {growth / MB:.0f} MB in every round ({[s // MB for s in settled]} MB)"
