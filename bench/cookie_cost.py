"""CPU a served Queuewatch spends on one unauthenticated request carrying a hostile Cookie header.

    .venv/bin/python bench/cookie_cost.py [--requests 20] [--escapes 8000]

CVE-2024-7592: ``http.cookies._unquote`` (called by Django's ``parse_cookie`` for every request's
cookies, and by Channels for websocket handshakes) is quadratic in the number of backslash
escapes on unpatched interpreters. The benchmark starts the app as the tests do
(``tests.support.servers.AppServer``: the project's ASGI server, a private redis-server, a SQLite
file), then sends, one at a time, ``--requests`` GET /login/ with

* ``plain``: an ordinary cookie header (``csrftoken=…``), the baseline;
* ``hostile``: ``junk="\\\\\\\\…"``, ``--kib`` KiB of escaped backslashes;

and reads the server process's CPU time (``/proc/<pid>/stat``) before and after each batch.
Goal: a hostile request costs under 20 ms of CPU, whatever the interpreter.
Progress on stderr; the last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench import proc_tools as pt  # noqa: E402
from tests.support.servers import AppServer, RedisServer  # noqa: E402

GOAL_CPU_S = 0.020


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def batch(server: AppServer, cookie: str, n: int) -> dict:
    pid = server.proc.pid
    statuses: dict[int, int] = {}
    cpu0, wall0 = pt.cpu_seconds(pid), time.perf_counter()
    for _ in range(n):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        conn.request("GET", "/login/", headers={"Cookie": cookie})
        response = conn.getresponse()
        response.read()
        statuses[response.status] = statuses.get(response.status, 0) + 1
        conn.close()
    cpu, wall = pt.cpu_seconds(pid) - cpu0, time.perf_counter() - wall0
    return {
        "requests": n,
        "statuses": statuses,
        "server_cpu_s_per_request": round(cpu / n, 4),
        "wall_s_per_request": round(wall / n, 4),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--escapes", type=int, default=8000)
    args = ap.parse_args()
    redis_server = RedisServer()
    tmp = tempfile.mkdtemp(prefix="qw-cookie-")
    env = pt.app_env(
        redis_url=redis_server.url(0), dashboard_redis_url=redis_server.url(1), db_path=os.path.join(tmp, "db.sqlite3")
    )
    env["QUEUEWATCH_LOG_LEVEL"] = "INFO"  # AppServer reads the port the server logs
    pt.manage(env, "migrate", "-v0")
    server = AppServer(env, timeout=60)
    try:
        batch(server, "csrftoken=warm", 3)  # imports, templates, first connections
        hostile = 'junk="' + "\\\\" * args.escapes + '"'
        result = {
            "bench": "cookie_cost",
            "python": sys.version.split()[0],
            "goal": {"hostile_cpu_s_per_request_max": GOAL_CPU_S},
            "cookie_bytes": len(hostile),
            "plain": batch(server, "csrftoken=" + "a" * 32, args.requests),
            "hostile": batch(server, hostile, args.requests),
            "loadavg": os.getloadavg(),
        }
        result["goal_met"] = result["hostile"]["server_cpu_s_per_request"] < GOAL_CPU_S
        log(
            f"python {result['python']}: plain "
            f"{result['plain']['server_cpu_s_per_request'] * 1000:.1f} ms CPU/request, "
            f"hostile ({len(hostile)} B) {result['hostile']['server_cpu_s_per_request'] * 1000:.1f} ms CPU/request, "
            f"statuses {result['hostile']['statuses']}"
        )
        print(json.dumps(result))
        return 0
    finally:
        server.stop()
        redis_server.stop()


if __name__ == "__main__":
    sys.exit(main())
