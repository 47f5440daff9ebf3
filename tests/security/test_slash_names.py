"""Queue names (and prefixes) containing "/" — Python BullMQ creates them —
used to raise NoReverseMatch and take the overview and health pages down for everyone.
Every queue URL now carries its segments through one converter (dashboard/web/converters.py)."""

from __future__ import annotations

import json

import pytest
from django.urls import resolve, reverse

from dashboard.web.converters import decode_segment, encode_segment

pytestmark = pytest.mark.django_db

NAMES = ["reports/daily", "a~2Fb", "tilde~name", "plain"]


@pytest.mark.parametrize("raw", NAMES + ["/", "~", "~~2F/", "x/~7E/y"])
def test_segments_round_trip(raw):
    assert decode_segment(encode_segment(raw)) == raw
    assert "/" not in encode_segment(raw)


def seed(r, prefix):
    for name in NAMES:
        q = f"{prefix}:{name}:"
        r.hset(q + "meta", mapping={"opts.maxLenEvents": 10000})
        r.hset(
            q + "j1",
            mapping={
                "name": "job",
                "data": json.dumps({"n": name}),
                "timestamp": 1700000000000,
                "finishedOn": 1700000001000,
                "failedReason": "boom",
            },
        )
        r.zadd(q + "failed", {"j1": 1700000001000})


def test_pages_with_slash_names_render(prefixed_queues, logged_in):
    seed(prefixed_queues.client, prefixed_queues.prefix)
    bull = prefixed_queues.prefix
    for page in ("overview", "health", "schedulers"):
        response = logged_in.get(reverse(page))
        assert response.status_code == 200, page
    overview = logged_in.get(reverse("overview")).content.decode()
    for name in NAMES:
        queue_url = reverse("queue", args=["default", bull, name])
        assert queue_url in overview  # the overview links to every queue, "/" included
        match = resolve(queue_url)
        assert match.kwargs["name"] == name
        page = logged_in.get(queue_url + "?state=failed")
        assert page.status_code == 200 and b"j1" in page.content
        job = logged_in.get(reverse("job", args=["default", bull, name, "j1"]))
        assert job.status_code == 200 and name.encode() in job.content
        api = logged_in.get(reverse("api_queue", args=["default", bull, name]))
        assert api.status_code == 200 and api.json()["name"] == name


def test_websocket_route_decodes_the_same_way():
    from django.urls import URLResolver
    from django.urls.resolvers import RegexPattern

    from dashboard.routing import websocket_urlpatterns

    resolver = URLResolver(RegexPattern(r"^/"), websocket_urlpatterns)
    path = "/" + reverse("ws_queue", urlconf="dashboard.routing", args=["default", "bull", "reports/daily"]).lstrip("/")
    assert resolver.resolve(path).kwargs["name"] == "reports/daily"
