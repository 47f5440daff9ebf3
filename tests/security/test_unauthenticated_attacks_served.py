"""Attacks that need no login, against the served app (``AppServer``, SQLite as ``./dev run``
uses it).

* Many wrong passwords at once: some answered 500 ("database is locked": concurrent writes of
  the failure counts) and were not counted, so a fast enough attacker got more guesses than the
  limit. Now every one answers the normal login page and is counted.
* A 16 KB Cookie header of backslash escapes (CVE-2024-7592: quadratic unquoting in
  ``http.cookies``, which Django and Channels call): about a second of CPU per request on this
  interpreter. Now refused before anything parses it, for pages and websocket handshakes alike,
  and the server keeps answering (its CPU per request: ``bench/cookie_cost.py``)."""

from __future__ import annotations

import http.client
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

import pytest

from tests.support.browser import manage
from tests.support.servers import AppServer, RedisServer

pytestmark = pytest.mark.slow  # a migrate and a web process

ATTEMPTS = 24


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    server = RedisServer()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "logins-" + "x" * 40,
        "QUEUEWATCH_REDIS_URL": server.url(0),
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('logins') / 'db.sqlite3'}",
        "QUEUEWATCH_INSECURE_DEV": "1",
        "QUEUEWATCH_LOGIN_FAILURE_LIMIT": str(ATTEMPTS + 1),
    }
    manage(env, "migrate", "-v0")
    user, password = manage(env, "demo_user", "--username", "target").split(" / ")
    app = AppServer(env, timeout=60)
    try:
        yield app, user, password
    finally:
        app.stop()
        server.stop()


class Browser:
    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        page = self.opener.open(base + "/login/", timeout=60).read().decode()
        marker = 'name="csrfmiddlewaretoken" value="'
        self.token = page[page.index(marker) + len(marker) :].split('"', 1)[0]

    def log_in(self, username: str, password: str) -> int:
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": self.token, "username": username, "password": password})
        request = urllib.request.Request(
            self.base + "/login/", data=body.encode(), headers={"Referer": self.base + "/login/"}
        )
        try:
            with self.opener.open(request, timeout=60) as response:
                return 302 if response.url.rstrip("/") != self.base + "/login" else response.status
        except urllib.error.HTTPError as exc:
            return exc.code


def test_every_concurrent_failed_login_is_counted_and_answers_the_login_page(web):
    app, user, password = web
    browsers = [Browser(app.url) for _ in range(ATTEMPTS)]
    start = threading.Barrier(ATTEMPTS)
    answers: list[int] = []

    def guess(n: int) -> None:
        start.wait()
        answers.append(browsers[n].log_in(f"sprayed-{n}", "guess"))

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(ATTEMPTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [200] * ATTEMPTS, [line for line in app.said().splitlines() if "Error" in line]
    # Every failure counted: one more from this address reaches the limit, and then even the
    # right password is refused.
    assert Browser(app.url).log_in("sprayed-last", "guess") == 429
    assert Browser(app.url).log_in(user, password) == 429


HOSTILE_COOKIE = 'junk="' + "\\\\" * 8000 + '"'  # 16 KB: 8,000 escaped backslashes


def request_with(app, path: str, cookie: str, extra: dict | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=60)
    try:
        conn.request("GET", path, headers={"Cookie": cookie, **(extra or {})})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


def test_a_hostile_cookie_header_is_refused_before_it_is_parsed(web):
    app, _, _ = web
    for _ in range(3):
        status, body = request_with(app, "/login/", HOSTILE_COOKIE)
        assert status == 400 and "Cookie header is malformed" in body
    handshake = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Origin": app.url,
    }
    # Never upgraded: refused by the guard (403), or — uvicorn's websocket parser takes request
    # lines of at most 8 KB — never parsed at all, so the request reaches no code of ours.
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=5)
    try:
        conn.request("GET", "/ws/all/", headers={"Cookie": HOSTILE_COOKIE, **handshake})
        status = conn.getresponse().status
    except TimeoutError:
        status = None
    finally:
        conn.close()
    assert status in (403, None)
    # The server stays responsive, and ordinary cookies (a few backslashes included) still work.
    status, body = request_with(app, "/login/", 'csrftoken=abc; theme="a\\\\b"')
    assert status == 200 and 'name="csrfmiddlewaretoken"' in body
