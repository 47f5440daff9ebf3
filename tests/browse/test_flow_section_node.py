"""The flow section of a job page, against a flow real Node BullMQ 6.7 ran
(tests/node/flow_outcomes.mjs): a parent's children are listed by what BullMQ recorded — pending,
processed (with their return value), failed but ignored (``:failed``, with the reason) and failed
so as to fail the parent (``:unsuccessful``, with the reason) — equal to ``Job.getDependencies()``,
on the page and in the API; a child's page says what its failure does to the parent; discarding a
failed child does not claim to take it off dependencies it had already left."""

from __future__ import annotations

import json
from html import unescape

import pytest
from django.urls import reverse

from tests.support.accounts import token_for, user_with
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


@pytest.fixture
def flow(prefixed_queues):
    ran = run_node("flow_outcomes.mjs", prefixed_queues.url, prefix=prefixed_queues.prefix)
    assert ran["childStates"] == {"c-ok": "completed", "c-ignored": "failed", "c-fatal": "failed", "c-later": "waiting"}
    return ran


def section(html: str, title: str) -> str:
    start = html.index(title)
    return html[start : html.index("</ul>", start)]


def test_a_parents_children_are_listed_as_bullmq_recorded_them_with_values_and_reasons(client, prefixed_queues, flow):
    deps = flow["dependencies"]
    key = prefixed_queues.prefix
    client.force_login(user_with("viewer"))
    html = unescape(client.get(reverse("job", args=[*prefixed_queues.args("parents"), "parent-1"])).content.decode())
    assert f"{key}:kids-later:c-later" in section(html, "Pending children (1)")
    processed = section(html, "Processed children (1)")
    assert f"{key}:kids:c-ok" in processed and '{"rows":3}' in processed
    ignored = section(html, "Failed children the parent went on without (1)")
    assert f"{key}:kids:c-ignored" in ignored and "ignored boom" in ignored and "c-fatal" not in ignored
    fatal = section(html, "Failed children that fail the parent (1)")
    assert f"{key}:kids:c-fatal" in fatal and "fatal boom" in fatal and "c-ignored" not in fatal

    api = client.get(
        reverse("api_job", args=[*prefixed_queues.args("parents"), "parent-1"]),
        HTTP_AUTHORIZATION=f"Bearer {token_for(user_with('operator', username='api'))}",
    ).json()
    assert api["children"] == {
        "pending": deps["unprocessed"],
        "processed": sorted(deps["processed"]),
        "ignored": sorted(deps["ignored"]),
        "failed": deps["failed"],
    }
    outcomes = api["children_outcomes"]
    assert json.loads(outcomes[f"{key}:kids:c-ok"]) == deps["processed"][f"{key}:kids:c-ok"]
    assert outcomes[f"{key}:kids:c-ignored"] == deps["ignored"][f"{key}:kids:c-ignored"] == "ignored boom"
    assert outcomes[f"{key}:kids:c-fatal"] == "fatal boom"


def test_a_childs_page_says_what_its_failure_does_to_the_parent(client, prefixed_queues, flow):
    client.force_login(user_with("viewer"))

    def page(job_id: str) -> str:
        return unescape(client.get(reverse("job", args=[*prefixed_queues.args("kids"), job_id])).content.decode())

    assert "its parent fails too (failParentOnFailure)" in page("c-fatal")
    assert "its parent ignores the failure" in page("c-ignored")
    assert "its parent keeps waiting for it" in page("c-ok")


def test_discarding_a_failed_child_does_not_claim_to_release_its_parent(client, prefixed_queues, flow):
    client.force_login(user_with("operator"))
    parent_key = f"{prefixed_queues.prefix}:parents:parent-1"
    answer = client.post(
        reverse("job_action", args=[*prefixed_queues.args("kids"), "discard", "c-fatal"]), {"reason": "cleanup"}
    )
    message = unescape(answer.content.decode())
    assert "taken off its parent" not in message
    assert f"Its parent {parent_key} was not waiting for it any more" in message
    # What BullMQ's removeJob left on the parent: its record of the failure, and its pending child.
    r = prefixed_queues.client
    assert r.zrange(parent_key + ":unsuccessful", 0, -1) == [f"{prefixed_queues.prefix}:kids:c-fatal".encode()]
    assert r.smembers(parent_key + ":dependencies") == {f"{prefixed_queues.prefix}:kids-later:c-later".encode()}

    # A pending child is still taken off its parent's dependencies, and says so.
    answer = client.post(
        reverse("job_action", args=[*prefixed_queues.args("kids-later"), "discard", "c-later"]), {"reason": "cleanup"}
    )
    assert "taken off its parent" in unescape(answer.content.decode())
    assert r.scard(parent_key + ":dependencies") == 0
