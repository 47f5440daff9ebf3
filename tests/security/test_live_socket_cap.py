"""One user cannot hold an unbounded number of live sockets. The attack: a logged-in viewer opens
socket after socket (each one joins groups the monitor sends to, and its web process relays to
it); 6,000 took the monitor from 4 % to 43 % CPU. Now each user holds at most
``QUEUEWATCH_LIVE_SOCKETS_PER_USER`` open sockets, counted across web processes in the
dashboard Redis; one more is closed with 4429, and a closed socket gives its place back.

Two real web processes (``AppServer``) share one dashboard Redis and database; the sockets are
plain websocket clients with the session cookie the real login form set."""

from __future__ import annotations

import os

import pytest

from tests.support.browser import manage
from tests.support.servers import AppServer, RedisServer
from tests.support.waiting import wait_for
from tests.support.ws_client import RawSocket, log_in_cookie

pytestmark = pytest.mark.slow  # two web processes and a migrate

CAP = 3
TOO_MANY_SOCKETS = 4429
LEASES = "queuewatch:sockets:"  # dashboard/live/socket_leases.py's key prefix


@pytest.fixture(scope="module")
def two_webs(tmp_path_factory):
    server = RedisServer()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "sockets-" + "x" * 40,
        "QUEUEWATCH_REDIS_URL": server.url(0),
        "QUEUEWATCH_DASHBOARD_REDIS_URL": server.url(1),
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('sockets') / 'db.sqlite3'}",
        "QUEUEWATCH_INSECURE_DEV": "1",
        "QUEUEWATCH_LIVE_SOCKETS_PER_USER": str(CAP),
    }
    manage(env, "migrate", "-v0")
    logins = [manage(env, "demo_user", "--username", name).split(" / ") for name in ("greedy", "other")]
    webs = [AppServer(env, timeout=60), AppServer(env, timeout=60)]
    try:
        cookies = [f"sessionid={log_in_cookie(webs[0].url, user, password)}" for user, password in logins]
        yield webs, cookies, server.client(1)
    finally:
        for web in webs:
            web.stop()
        server.stop()


def held(dash, cookie_index: int) -> int:
    """Leases held in the dashboard Redis by the user of that login (users 1 and 2)."""
    return dash.zcard(f"{LEASES}{cookie_index + 1}")


def test_sockets_over_the_per_user_cap_are_closed_with_4429_across_web_processes(two_webs):
    (a, b), (greedy, other), dash = two_webs
    sockets = [
        RawSocket(a.port, "/ws/all/", cookie=greedy),
        RawSocket(b.port, "/ws/overview/", cookie=greedy),
        RawSocket(a.port, "/ws/all/", cookie=greedy),
    ]
    assert all(s.status == 101 for s in sockets)
    wait_for(lambda: held(dash, 0) == CAP, timeout=10)
    try:
        # One more, on either process: accepted, then closed at once with the code the page shows.
        for web in (a, b):
            extra = RawSocket(web.port, "/ws/all/", cookie=greedy)
            assert extra.status == 101
            assert extra.close_code(within=10) == TOO_MANY_SOCKETS
            extra.close()
        assert held(dash, 0) == CAP  # the refused ones hold nothing

        # Another user is not affected by this one's sockets.
        theirs = RawSocket(b.port, "/ws/all/", cookie=other)
        wait_for(lambda: held(dash, 1) == 1, timeout=10)
        theirs.close()

        # A closed socket gives its place back at once (not when its lease lapses).
        sockets.pop(0).close()
        wait_for(lambda: held(dash, 0) == CAP - 1, timeout=10)
        sockets.append(RawSocket(b.port, "/ws/all/", cookie=greedy))
        wait_for(lambda: held(dash, 0) == CAP, timeout=10)
        refused = RawSocket(a.port, "/ws/all/", cookie=greedy)
        assert refused.close_code(within=10) == TOO_MANY_SOCKETS
        refused.close()
    finally:
        for s in sockets:
            s.close()
