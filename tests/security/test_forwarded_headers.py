"""The web server Queuewatch ships does not take the client's address from ``X-Forwarded-For``.

Login throttling counts failures per address (``REMOTE_ADDR``). uvicorn, by default, replaces
that address with the one in ``X-Forwarded-For`` for connections from loopback, so a client on
the same host (or behind a local proxy that passes the header on) could spray user names with
a new forged address each time and never be locked. Real stack: the shipped server in a
subprocess, logins over HTTP through the login form."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.support.browser import manage
from tests.support.servers import AppServer, RedisServer, app_env

LIMIT = 3


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    redis_server = RedisServer()
    env = {
        **app_env(
            redis_url=redis_server.url(),
            dashboard_url=redis_server.url(1),
            database=str(tmp_path_factory.mktemp("forwarded") / "db.sqlite3"),
        ),
        "QUEUEWATCH_LOGIN_FAILURE_LIMIT": str(LIMIT),
    }
    manage(env, "migrate", "-v0")
    username, password = manage(env, "demo_user", "--username", "bob").split(" / ")
    web = AppServer(env, timeout=30)
    yield web, username, password
    web.stop()
    redis_server.stop()


def test_a_forged_x_forwarded_for_does_not_escape_the_per_address_lock(server):
    web, username, password = server
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect)
    form = opener.open(web.url + "/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)

    def attempt(user: str, secret: str, forwarded_for: str) -> int:
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": user, "password": secret})
        request = urllib.request.Request(
            web.url + "/login/",
            data=body.encode(),
            headers={
                "Referer": web.url + "/login/",
                "X-Forwarded-For": forwarded_for,
                "Forwarded": f"for={forwarded_for}",
            },
        )
        try:
            with opener.open(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as answer:
            return answer.code

    # One client sprays user names, each attempt claiming another address.
    answers = [attempt(f"nobody{n}", "guess", f"198.51.100.{n + 1}") for n in range(LIMIT)]
    assert answers[:-1] == [200] * (LIMIT - 1)  # the last failure is the one that locks
    # Its real address is locked, whatever address it claims next: even the right password fails.
    assert attempt(username, password, "203.0.113.99") == 429
