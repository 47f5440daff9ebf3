"""No browser or proxy cache keeps what Queuewatch answers with job data or account details:
pages, fragments, downloads and API answers say ``Cache-Control: no-store, private``; static
files keep their own caching."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.accounts import token_for, user_with

pytestmark = pytest.mark.django_db


def test_pages_api_answers_and_downloads_are_not_stored(client, prefixed_queues):
    client.force_login(user_with("admin"))
    token = token_for(user_with("operator"))
    answers = [
        client.get(reverse("overview")),
        client.get(reverse("audit")),
        client.get(reverse("audit_csv")),
        client.get(reverse("api_queues"), HTTP_AUTHORIZATION=f"Bearer {token}"),
        client.get(reverse("api_queues")),  # the session works there too
    ]
    for response in answers:
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"], response
        if response.streaming:  # read to the end: the download's slot is given back
            b"".join(response.streaming_content)


def test_an_anonymous_answer_is_not_stored_either(client):
    response = client.get(reverse("api_queues"))
    assert response.status_code == 401 and "no-store" in response["Cache-Control"]


def test_static_files_keep_their_caching(client):
    response = client.get("/static/queuewatch.css")
    if response.status_code == 404:
        pytest.fail("the static file is not served in tests: check WhiteNoise's settings")
    assert "no-store" not in response.get("Cache-Control", "")
