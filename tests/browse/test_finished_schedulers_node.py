"""Job schedulers that real Node BullMQ 6.7 has finished (tests/node/finished_schedulers.mjs): one
with ``limit: 2`` whose two iterations a worker took, one whose ``endDate`` passed. BullMQ keeps
both entries with their last run's time as score (what ``getJobSchedulers`` reports as
``next``); the API and the schedulers page say "finished" and show no next run, while a cron
scheduler whose one allowed iteration is still to come keeps its next run. The finished
scheduler's last (completed) iteration can be discarded; a pending one still cannot."""

from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from tests.support.accounts import token_for
from tests.support.redis_db import point_at
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]

QUEUE = "ticker"


@pytest.fixture
def finished(settings, redis_prefix):
    """BullMQ's own report of the schedulers once its worker finished two of them."""
    result = run_node("finished_schedulers.mjs", redis_prefix.url, QUEUE, prefix=redis_prefix.prefix)
    point_at(settings, redis_prefix.spec())
    by_id = {s["key"]: s for s in result["schedulers"]}
    now = time.time() * 1000
    # How BullMQ leaves them: the entry stays, scored with the last run, now in the past.
    assert by_id["limited"]["iterationCount"] == by_id["limited"]["limit"] == 2 and by_id["limited"]["next"] < now
    assert by_id["ending"]["endDate"] < now and by_id["ending"]["next"] < now
    assert by_id["new-year"]["iterationCount"] == by_id["new-year"]["limit"] == 1 and by_id["new-year"]["next"] > now
    return redis_prefix, result, by_id


def test_api_lists_finished_schedulers_with_no_next_run(client, finished):
    prefixed, _result, by_id = finished
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token_for(User.objects.create_user('reader', password='pw'))}"}
    r = client.get(reverse("api_queue", args=prefixed.args(QUEUE)), **auth)
    assert r.status_code == 200, r.content
    listed = {s["id"]: s for s in r.json()["schedulers_list"]}
    assert {k: (listed[k]["finished"], listed[k]["next_run"]) for k in listed} == {
        "limited": (True, None),
        "ending": (True, None),
        "new-year": (False, by_id["new-year"]["next"]),
    }
    assert (listed["limited"]["iterations"], listed["limited"]["limit"]) == (2, 2)


def test_schedulers_page_says_finished_instead_of_a_past_next_run(client, user, finished):
    prefixed, _result, by_id = finished
    client.force_login(user)
    html = client.get(reverse("queue_schedulers", args=prefixed.args(QUEUE))).content.decode()
    rows = {sid: html[html.index(f"<code>{sid}</code>") :].split("</tr>", 1)[0] for sid in by_id}
    for sid in ("limited", "ending"):
        assert 'class="badge finished"' in rows[sid] and "<time" not in rows[sid], rows[sid]
    assert 'class="badge finished"' not in rows["new-year"] and "<time" in rows["new-year"]


def test_last_iteration_of_a_finished_scheduler_can_be_discarded(client, finished):
    prefixed, result, by_id = finished
    operator = User.objects.create_user("op", password="pw")
    operator.groups.add(Group.objects.get_or_create(name="operator")[0])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token_for(operator)}"}

    def discard(job_id):
        url = reverse("api_job_action", args=[*prefixed.args(QUEUE), "discard", job_id])
        return client.post(url, json.dumps({"reason": "clean-up"}), content_type="application/json", **auth)

    last = f"repeat:limited:{by_id['limited']['next']}"
    assert last in result["completed"]  # what BullMQ's removeJob alone refuses as "the next iteration"
    r = discard(last)
    assert r.status_code == 200 and r.json()["outcome"] == "done", r.content
    assert not prefixed.client.exists(prefixed.queue(QUEUE).job_key(last))
    # The scheduler itself stays, finished, as BullMQ left it.
    assert prefixed.client.zscore(prefixed.queue(QUEUE).key("repeat"), "limited") == by_id["limited"]["next"]

    pending = f"repeat:new-year:{by_id['new-year']['next']}"
    r = discard(pending)
    assert r.status_code == 409 and r.json()["outcome"] == "scheduler_iteration", r.content
    assert prefixed.client.exists(prefixed.queue(QUEUE).job_key(pending))
