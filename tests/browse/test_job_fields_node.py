"""The job page shows what Node BullMQ 6.7 stores: options under their real names (as
Job.optsFromJSON reads them, not ``kl``, ``de``, ``fpof``), telemetry metadata, the
deduplication key's owner and TTL, a link from a scheduler iteration to its scheduler, a progress
bar for numeric progress, and a parent's ``flowAttachmentFailed``."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.node,
    pytest.mark.django_db,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]


@pytest.fixture(autouse=True)
def node_tz(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")


@pytest.fixture
def made(prefixed_queues):
    q = prefixed_queues
    return run_node("figures.mjs", q.url, "jobs", "job67", prefix=q.prefix)


def page_of(client, queues, job_id: str) -> str:
    return " ".join(client.get(reverse("job", args=[*queues.args("jobs"), job_id])).content.decode().split())


def shown_options(page: str) -> dict:
    found = re.search(r'id="json-opts".*?<pre class="payload" dir="ltr">(.*?)</pre>', page)
    assert found, "no options section"
    return json.loads(html.unescape(found.group(1)))


def test_options_under_their_real_names_equal_node_job_opts(logged_in, prefixed_queues, made):
    owner = page_of(logged_in, prefixed_queues, made["owner"])
    assert shown_options(owner) == made["ownerOpts"]
    assert {"deduplication", "keepLogs", "telemetry"} <= set(made["ownerOpts"])
    child = page_of(logged_in, prefixed_queues, made["child"])
    assert shown_options(child) == made["childOpts"] and made["childOpts"]["failParentOnFailure"] is True
    for short in ('"kl"', '"de"', '"fpof"', '"tm"'):
        assert html.escape(short) not in owner + child


def test_telemetry_dedup_owner_and_progress_bar(logged_in, prefixed_queues, made):
    page = page_of(logged_in, prefixed_queues, made["owner"])
    assert "Telemetry context" in page and "00-4bf92f3577b34da6a3ce929d0e0e4736" in page
    assert made["dedupOwner"] == made["owner"]
    held = r'class="muted job-dedup">Deduplication key <code>d1</code>: held by this job \(expires in (59|60) s\)'
    assert re.search(held, page)
    assert '<progress max="100" value="42"' in page


def test_a_released_dedup_key_and_another_owner_are_told(logged_in, prefixed_queues, made):
    q = prefixed_queues
    key = q.queue("jobs").key("de:d1")
    q.client.set(key, "someone-else")  # no TTL: held until that job finishes
    page = page_of(logged_in, q, made["owner"])
    assert "held by job" in page and "someone-else" in page and "until that job finishes" in page
    q.client.delete(key)
    page = page_of(logged_in, q, made["owner"])
    assert "key released: the next job added with this id is not deduplicated" in page


def test_a_scheduler_iteration_links_to_its_scheduler(logged_in, prefixed_queues, made):
    page = page_of(logged_in, prefixed_queues, made["iteration"])
    # The scheduler's own page (whatever page of the list it is on), which the list links too.
    target = reverse("scheduler_detail", args=[*prefixed_queues.args("jobs"), "every-min"])
    assert f'href="{target}"' in page
    listing = logged_in.get(reverse("queue_schedulers", args=prefixed_queues.args("jobs"))).content.decode()
    assert 'id="scheduler-every-min"' in listing and f'href="{target}"' in listing


def test_a_parent_left_with_flow_attachment_failed_says_so(logged_in, prefixed_queues, made):
    q = prefixed_queues
    assert "flow-attachment-failed" not in page_of(logged_in, q, made["parent"])
    # What an insert cut short between a child's refusal (-7) and the parent's release leaves.
    q.client.hset(q.queue("jobs").job_key(made["parent"]), "flowAttachmentFailed", "1")
    assert "flow-attachment-failed" in page_of(logged_in, q, made["parent"])


def test_the_job_api_gives_the_same_fields(logged_in, prefixed_queues, made):
    body = logged_in.get(reverse("api_job", args=[*prefixed_queues.args("jobs"), made["owner"]])).json()
    assert json.loads(body["opts"]["text"]) == made["ownerOpts"]
    assert body["deduplication"]["id"] == "d1" and body["deduplication"]["owner"] == made["owner"]
    assert 0 < body["deduplication"]["ttl_ms"] <= 60_000
    assert body["telemetryMetadata"].startswith('{"traceparent"') and body["flowAttachmentFailed"] is False


def test_the_parent_flags_are_those_bullmq_acts_on(logged_in, prefixed_queues, made):
    q = prefixed_queues
    page = page_of(logged_in, q, made["child"])
    assert "Flags in its parent link (what BullMQ acts on): <code>failParentOnFailure</code>" in page
    assert "If this job fails, its parent fails too (failParentOnFailure)." in page
    # moveToFinished reads the parent field, not the options: the page follows the field.
    key = q.queue("jobs").job_key(made["child"])
    parent = json.loads(q.client.hget(key, "parent"))
    q.client.hset(key, "parent", json.dumps({"id": parent["id"], "queueKey": parent["queueKey"], "cpof": True}))
    page = page_of(logged_in, q, made["child"])
    assert "<code>continueParentOnFailure</code>" in page and "(continueParentOnFailure)" in page
    body = logged_in.get(reverse("api_job", args=[*q.args("jobs"), made["child"]])).json()
    assert body["parentFlags"] == ["continueParentOnFailure"]
