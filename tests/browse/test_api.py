"""JSON API v1: shapes, bearer-token auth, 401 for anonymous callers."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

pytestmark = [pytest.mark.node, pytest.mark.django_db]


@pytest.fixture
def token(user):
    out = StringIO()
    call_command("api_token", user.username, stdout=out)
    return out.getvalue().strip()


def bearer(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_queues_endpoint_shape_and_counts(client, token, node_queues):
    response = client.get(reverse("api_queues"), **bearer(token))
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    body = response.json()
    by_name = {(q["prefix"], q["name"]): q for q in body["queues"]}
    for expected in node_queues["queues"]:
        got = by_name[(expected["prefix"], expected["name"])]
        assert got["connection"] == "default"
        assert got["paused"] == expected["paused"]
        assert got["counts"] == expected["counts"]
        assert set(got["counts"]) == {
            "waiting",
            "active",
            "delayed",
            "prioritized",
            "waiting-children",
            "completed",
            "failed",
        }


def test_queue_jobs_and_job_endpoints(client, token, node_queues):
    r = client.get(reverse("api_queue", args=["default", "bull", "sched"]), **bearer(token))
    assert r.status_code == 200 and len(r.json()["schedulers_list"]) == 2
    r = client.get(
        reverse("api_jobs", args=["default", "bull", "mixed"]), {"state": "failed", "size": 10}, **bearer(token)
    )
    body = r.json()
    assert body["total"] == 4 and len(body["jobs"]) == 4 and "data" not in body["jobs"][0]
    job_id = body["jobs"][0]["id"]
    r = client.get(reverse("api_job", args=["default", "bull", "mixed", job_id]), **bearer(token))
    job = r.json()
    assert job["state"] == "failed" and job["stacktrace"] and job["failedReason"]


def test_api_token_command_prints_a_working_token_and_stores_only_a_hash(token, user):
    from dashboard.accounts.models import ApiToken, hash_token

    row = ApiToken.objects.get(user=user)
    assert row.token_hash == hash_token(token) and token not in row.token_hash


def test_api_token_for_unknown_user_fails_clearly():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("api_token", "ghost")


def test_anonymous_and_bad_tokens_get_401_json(client, node_queues):
    for headers in ({}, bearer("qw_wrong"), {"HTTP_AUTHORIZATION": "Basic abc"}):
        r = client.get(reverse("api_queues"), **headers)
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def test_inactive_user_token_is_refused(client, token, user, node_queues):
    user.is_active = False
    user.save()
    assert client.get(reverse("api_queues"), **bearer(token)).status_code == 401


def test_api_404_and_bad_state_fallback(client, token, node_queues):
    r = client.get(reverse("api_job", args=["default", "bull", "mixed", "nope"]), **bearer(token))
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = client.get(reverse("api_jobs", args=["default", "bull", "mixed"]), {"state": "bogus"}, **bearer(token))
    assert r.status_code == 200 and r.json()["state"] == "waiting"
