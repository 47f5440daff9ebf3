"""The edit-and-retry page after "Save and retry": the data it shows becomes the data now
stored, and its save form goes (the job is no longer failed)."""

from __future__ import annotations

import json

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.urls import reverse

from queues.keys import QueueRef
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db

Q = ("default", "bull", "editing")
QUEUE = QueueRef(*Q)


@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


def test_saving_shows_the_stored_data_and_removes_the_save_form(operator_client, actions_redis):
    r = redis.Redis.from_url(actions_redis)
    r.hset(QUEUE.key("meta"), "opts.maxLenEvents", 10000)  # the queue exists
    job = seed_failed(r, QUEUE, 1, data=lambda i: {"to": "bad@"})[0]
    page = operator_client.get(reverse("edit_retry", args=[*Q, job])).content.decode()
    assert '<pre id="edit-current-data" class="payload" dir="ltr">{\n  &quot;to&quot;: &quot;bad@&quot;' in page
    patch = '{"to": "ok@example.com"}'
    preview = operator_client.post(
        reverse("edit_retry_preview", args=[*Q, job]), {"patch": patch}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'id="edit-save"' in preview and 'name="shown_on" value="edit-page"' in preview
    expected = preview.split('name="expected" value="', 1)[1].split('"', 1)[0]
    saved = operator_client.post(
        reverse("job_action", args=[*Q, "edit-retry", job]),
        {"patch": patch, "expected": expected, "reason": "typo", "shown_on": "edit-page"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert json.loads(r.hget(QUEUE.job_key(job), "data")) == {"to": "ok@example.com"}
    assert 'class="action-result ok"' in saved
    shown = saved.split('id="edit-current-data"', 1)[1].split("</pre>", 1)[0]
    assert 'hx-swap-oob="true"' in shown and "ok@example.com" in shown and "bad@" not in shown
    assert '<form id="edit-save" hx-swap-oob="delete"></form>' in saved
    assert "job-live" not in saved  # not the job page's parts: they are not on this page
