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


ODD_QUEUES = [".", ".."]
ODD_JOB_IDS = ["..", ".", "a/../b", "./x", "line\nbreak", "tab\there", "nul\x00id", "ok.id"]


def no_dot_segment_or_control(url: str) -> bool:
    from urllib.parse import unquote

    path = unquote(url)
    return all(part not in (".", "..") for part in path.split("/")) and not any(ord(c) < 32 for c in path)


def test_queues_named_dot_and_jobs_with_dot_segments_or_control_characters_are_reachable(prefixed_queues, logged_in):
    """The attack (or accident): a queue named ``..`` or a job id ``a/../b`` or ``line\\nbreak``
    exists in Redis. Its links resolved to another page in the browser (dot segments) or matched
    no route (a newline): unreachable, so nobody could inspect or discard it. Every link now
    carries them escaped."""
    r, bull = prefixed_queues.client, prefixed_queues.prefix
    for name in ODD_QUEUES + ["jobs-odd"]:
        r.hset(f"{bull}:{name}:meta", mapping={"opts.maxLenEvents": 10000})
    for queue in ODD_QUEUES:
        r.hset(f"{bull}:{queue}:j1", mapping={"name": "job", "data": "{}", "timestamp": 1700000000000})
        r.lpush(f"{bull}:{queue}:wait", "j1")
        url = reverse("queue", args=["default", bull, queue])
        assert no_dot_segment_or_control(url), url
        assert resolve(url).kwargs["name"] == queue
        assert logged_in.get(url).status_code == 200
        assert logged_in.get(reverse("job", args=["default", bull, queue, "j1"])).status_code == 200
    for job_id in ODD_JOB_IDS:
        r.hset(f"{bull}:jobs-odd:{job_id}", mapping={"name": "odd", "data": json.dumps({"id": job_id}), "timestamp": 1})
        r.lpush(f"{bull}:jobs-odd:wait", job_id)
        for route in ("job", "api_job"):
            url = reverse(route, args=["default", bull, "jobs-odd", job_id])
            assert no_dot_segment_or_control(url), url
            assert resolve(url).kwargs["job_id"] == job_id
            response = logged_in.get(url)
            assert response.status_code == 200, (job_id, route)
    page = logged_in.get(reverse("queue", args=["default", bull, "jobs-odd"]) + "?state=waiting").content.decode()
    assert reverse("job", args=["default", bull, "jobs-odd", "a/../b"]) in page


@pytest.mark.parametrize("job_id", ["..", "a/./b", "line\nbreak", "nul\x00"])
def test_adding_a_job_with_a_dot_segment_or_control_character_id_is_refused(prefixed_queues, client, job_id):
    from tests.support.accounts import user_with

    r, bull = prefixed_queues.client, prefixed_queues.prefix
    r.hset(f"{bull}:made:meta", mapping={"opts.maxLenEvents": 10000})
    client.force_login(user_with("operator"))
    response = client.post(
        reverse("queue_action", args=["default", bull, "made", "add"]), {"name": "x", "data": "{}", "jobId": job_id}
    )
    assert response.status_code == 400 and b"jobId" in response.content
    assert r.llen(f"{bull}:made:wait") == 0
