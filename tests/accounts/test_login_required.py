"""Every URL in the URL conf requires login: pages redirect to the login page, the API
answers 401 JSON. Walks the resolver so a new URL cannot be added unprotected."""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

# The login page, and the language switcher and JavaScript strings it uses.
PUBLIC = {"login/", "language/", "jsi18n/"}
SAMPLE = {
    "connection": "default",
    "prefix": "bull",
    "name": "q",
    "job_id": "1",
    "field": "data",
    "app_label": "auth",
    "object_id": "1",
    "model_name": "user",
    "url": "x",
    "content_type_id": "1",
    "rule_id": "1",
    "silence_id": "1",
    "window_id": "1",
    "channel_id": "1",
    "task_id": "1",
    "search_id": "1",
    "token_id": "1",
    "action": "retry",
}


def walk(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern)


def concrete(route: str) -> str:
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLE.get(m.group(1), "x"), route)
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: SAMPLE.get(m.group(1), "x"), route)
    return "/" + route.lstrip("^").rstrip("$").replace("\\Z", "").replace("\\", "")


def test_every_url_requires_login(client, scratch_queues):
    routes = sorted(set(walk(get_resolver().url_patterns)))
    assert len(routes) > 10
    checked = 0
    for route in routes:
        if route in PUBLIC or route.startswith("admin/") and "login" in route:
            continue
        url = concrete(route)
        response = client.get(url)
        if url.startswith("/api/") or url == "/metrics":
            assert response.status_code == 401, url
        else:
            assert response.status_code in (301, 302), (url, response.status_code)
            assert "login" in response["Location"], url
        checked += 1
    assert checked > 10


def test_login_page_is_public_and_logs_in(client, user, scratch_queues):
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": "viewer", "password": "viewer-pass"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
