"""The flow page: a flow real Node BullMQ 6.7 built across three queues
(tests/node/flow_tree.mjs) shown as a tree from its topmost parent, every node in the state
``getFlow()`` gives it, with its flag and its reason or return value; bounded reads that say
what they leave out; the flow actions (BullMQ's removeChildDependency and
removeUnprocessedChildren) with the parent moving on as BullMQ moves it (a Node worker then
runs it); and the warning before retrying a parent whose ``:unsuccessful`` children fail it again."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from queues.flows import FlowLimits
from queues.redact import Redactor
from queues.redis.jobs_facet import RedisJobs
from tests.support.accounts import user_with
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]

NODE = re.compile(r'<li class="flow-node[^"]*" data-key="([^"]+)" data-state="([^"]*)"')
WARNING = "failed it (failParentOnFailure) and is still recorded"


@pytest.fixture
def flow(prefixed_queues):
    return run_node("flow_tree.mjs", prefixed_queues.url, "build", prefix=prefixed_queues.prefix)


def flow_page(client, queues, queue: str, job_id: str, query: str = "") -> str:
    answer = client.get(reverse("job_flow", args=[*queues.args(queue), job_id]) + query)
    assert answer.status_code == 200, answer.content[:500]
    return unescape(answer.content.decode())


def node_html(html: str, key: str) -> str:
    start = html.index(f'data-key="{key}"')
    return html[start : html.find('<li class="flow-node', start + 1)]


def test_the_tree_from_a_grandchild_shows_the_whole_flow_in_getflows_states(client, prefixed_queues, flow):
    p = prefixed_queues.prefix
    client.force_login(user_with("viewer"))
    html = flow_page(client, prefixed_queues, "flow-later", "g-later")
    shown = dict(NODE.findall(html))
    assert shown == {n["key"]: n["state"] for n in flow["flow"]}
    assert next(iter(shown)) == f"{p}:flow-top:order-1"  # climbed to the topmost parent
    assert 'class="flow-node flow-focus"' in html.split(f'data-key="{p}:flow-later:g-later"')[0][-60:]

    fatal = node_html(html, f"{p}:flow-kids:k-fatal")
    assert "failParentOnFailure" in fatal and "reserve failed: card declined" in fatal
    assert "failed, and fails its parent" in fatal
    ignored = node_html(html, f"{p}:flow-kids:k-ignored")
    assert "ignoreDependencyOnFailure" in ignored and "notify failed: card declined" in ignored
    assert "failed, its parent went on without it" in ignored
    ok = node_html(html, f"{p}:flow-kids:k-ok")
    assert '{"charged":42}' in ok and "processed: its return value is on its parent" in ok
    root = node_html(html, f"{p}:flow-top:order-1")
    assert "2 pending, 1 processed, 1 failed and ignored, 1 failed so as to fail it" in root
    # A viewer is offered no action.
    assert "job-retry" not in html and "job-remove-child-dependency" not in html

    # The API gives the same tree.
    api = client.get(reverse("api_job_flow", args=[*prefixed_queues.args("flow-later"), "g-later"])).json()

    def flat(n):
        return [(n["key"], n["state"]), *(pair for c in n["children"] for pair in flat(c))]

    assert dict(flat(api["root"])) == shown and api["focus"] == f"{p}:flow-later:g-later"
    assert api["root"]["children"][0]["flag"] == "failParentOnFailure"
    assert api["root"]["children"][0]["failed_reason"] == "reserve failed: card declined"

    # The job page's flow section links here.
    job = client.get(reverse("job", args=[*prefixed_queues.args("flow-top"), "order-1"])).content.decode()
    assert reverse("job_flow", args=[*prefixed_queues.args("flow-top"), "order-1"]) in job


def test_the_read_is_bounded_and_says_what_it_leaves_out(client, prefixed_queues, flow):
    p = prefixed_queues.prefix
    jobs = RedisJobs(prefixed_queues.client, connection="default")
    queue = prefixed_queues.queue("flow-later")
    tree = jobs.flow(queue, "g-later", limits=FlowLimits(depth=1, children=2), from_root=True, redactor=Redactor())
    assert [n.key for n in tree.root.children] == [f"{p}:flow-kids:k-fatal", f"{p}:flow-kids:k-ignored"]
    assert tree.root.not_shown == 3 and all(not n.children for n in tree.root.children)
    tree = jobs.flow(queue, "g-later", limits=FlowLimits(nodes=3), from_root=True, redactor=Redactor())
    assert tree.nodes_read == 3 and tree.budget_spent and tree.root.not_shown == 3
    tree = jobs.flow(queue, "g-later", limits=FlowLimits(climb=1), from_root=True, redactor=Redactor())
    assert tree.root.key == f"{p}:flow-kids:pack-1" and tree.root_has_parent
    # From a job, not its root: the page offers the whole flow.
    client.force_login(user_with("viewer"))
    html = flow_page(client, prefixed_queues, "flow-kids", "pack-1", "?from=here")
    assert list(dict(NODE.findall(html))) == [f"{p}:flow-kids:pack-1", f"{p}:flow-later:g-later"]
    assert "This job has a parent" in html


def test_removing_a_child_dependency_lets_its_parent_run_as_bullmq_does(client, prefixed_queues, flow):
    p = prefixed_queues.prefix
    r = prefixed_queues.client
    assert flow["order2"] == "waiting-children"
    operator = user_with("operator")
    client.force_login(operator)
    html = flow_page(client, prefixed_queues, "flow-top", "order-2")
    assert "job-remove-child-dependency" in node_html(html, f"{p}:flow-later:k2-later")
    assert "job-remove-child-dependency" not in node_html(html, f"{p}:flow-top:order-2")

    url = reverse("job_action", args=[*prefixed_queues.args("flow-later"), "remove-child-dependency", "k2-later"])
    refused = Client(enforce_csrf_checks=True)
    refused.force_login(operator)
    assert refused.post(url, {"reason": "ship by hand"}).status_code == 403  # no CSRF token
    answer = unescape(client.post(url, {"reason": "ship by hand", "shown_on": "flow"}).content.decode())
    assert "taken off its parent" in answer and "the parent moved to waiting" in answer
    assert r.hget(f"{p}:flow-later:k2-later", "parentKey") is None
    last = r.xrevrange(f"{p}:flow-top:events", count=1)[0][1]
    assert last[b"event"] == b"waiting" and last[b"jobId"] == b"order-2"
    entry = AuditEntry.objects.get(action="job.remove-child-dependency")
    assert entry.reason == "ship by hand" and entry.job_ids == ["k2-later"] and entry.queue == "flow-later"

    ran = run_node("flow_tree.mjs", prefixed_queues.url, "work-top", "order-2", prefix=prefixed_queues.prefix)
    assert ran == {"state": "completed", "returnvalue": {"shipped": "order-2"}}

    # Again: nothing to remove now.
    again = unescape(client.post(url, {"reason": "again"}).content.decode())
    assert "has no flow parent" in again


def test_removing_unprocessed_children_releases_the_parent(client, prefixed_queues, flow):
    p = prefixed_queues.prefix
    r = prefixed_queues.client
    client.force_login(user_with("viewer", username="v"))
    url = reverse("job_action", args=[*prefixed_queues.args("flow-kids"), "remove-unprocessed", "pack-1"])
    assert client.post(url, {"reason": "x"}).status_code == 403
    client.force_login(user_with("operator"))
    html = flow_page(client, prefixed_queues, "flow-kids", "pack-1")
    assert "job-remove-unprocessed" in node_html(html, f"{p}:flow-kids:pack-1")
    assert "job-remove-unprocessed" not in node_html(html, f"{p}:flow-later:g-later")
    answer = unescape(client.post(url, {"reason": "label printed elsewhere"}).content.decode())
    assert "Removed 1 unprocessed child job(s) of job pack-1" in answer and "moved to waiting" in answer
    assert not r.exists(f"{p}:flow-later:g-later")
    assert r.lpos(f"{p}:flow-kids:wait", "pack-1") is not None
    assert AuditEntry.objects.filter(action="job.remove-unprocessed", job_ids=["pack-1"]).exists()


def test_retrying_a_parent_with_unsuccessful_children_warns_it_fails_again(client, prefixed_queues, flow):
    p = prefixed_queues.prefix
    # BullMQ deferred the failure: the parent fails when a worker takes it.
    ran = run_node("flow_tree.mjs", prefixed_queues.url, "work-top", "order-1", prefix=prefixed_queues.prefix)
    assert ran["state"] == "failed"
    client.force_login(user_with("operator"))
    job = unescape(client.get(reverse("job", args=[*prefixed_queues.args("flow-top"), "order-1"])).content.decode())
    assert WARNING in job and 'name="confirm_unsuccessful"' in job
    # The operators' live fragment (the monitor re-renders the actions when the job changes) keeps it.
    from dashboard.live.fragments import job_actions

    live = RedisJobs(prefixed_queues.client, connection="default").live_detail(
        prefixed_queues.queue("flow-top"), "order-1", redactor=Redactor()
    )
    assert live.unsuccessful_children == 1 and WARNING in unescape(str(job_actions(live)[1]))
    html = flow_page(client, prefixed_queues, "flow-top", "order-1")
    assert WARNING in node_html(html, f"{p}:flow-top:order-1")
    assert WARNING not in node_html(html, f"{p}:flow-kids:k-fatal")  # a retry of the child is what helps

    url = reverse("job_action", args=[*prefixed_queues.args("flow-top"), "retry", "order-1"])
    retried = client.post(url, {"confirm_unsuccessful": "1"}).content.decode()
    assert "moved from failed back to waiting" in unescape(retried)
    ran = run_node("flow_tree.mjs", prefixed_queues.url, "work-top", "order-1", prefix=prefixed_queues.prefix)
    assert ran["state"] == "failed"  # as the warning said


def test_a_scoped_operator_sees_only_their_queues_nodes_and_gets_no_flow_action(client, prefixed_queues, flow):
    from dashboard.accounts.models import QueueGrant

    p = prefixed_queues.prefix
    user = user_with(None, username="later-team")
    QueueGrant.objects.create(user=user, role="operator", queue_glob="flow-later")
    client.force_login(user)
    html = flow_page(client, prefixed_queues, "flow-later", "g-later")
    fatal = node_html(html, f"{p}:flow-kids:k-fatal")
    assert "(in a queue outside your scope)" in fatal and "card declined" not in fatal
    assert "failParentOnFailure" not in fatal and 'data-state=""' in fatal
    assert 'data-state="waiting"' in node_html(html, f"{p}:flow-later:g-later")
    assert "job-discard" in node_html(html, f"{p}:flow-later:k-later") and "job-remove-child" not in html
    url = reverse("job_action", args=[*prefixed_queues.args("flow-later"), "remove-child-dependency", "k2-later"])
    assert client.post(url, {"reason": "mine"}).status_code == 403
    assert prefixed_queues.client.hget(f"{p}:flow-later:k2-later", "parentKey") is not None


def test_the_api_refuses_a_child_its_parent_no_longer_waits_for(client, prefixed_queues, flow):
    from tests.support.accounts import token_for

    url = reverse("api_job_action", args=[*prefixed_queues.args("flow-kids"), "remove-child-dependency", "k-ok"])
    answer = client.post(
        url, {"reason": "x"}, HTTP_AUTHORIZATION=f"Bearer {token_for(user_with('operator', username='api'))}"
    )
    assert answer.status_code == 409
    assert answer.json()["outcome"] == "wrong_state" and "not among its parent" in answer.json()["message"]


def test_hostile_keys_in_a_flow_read_as_missing_jobs(client, prefixed_queues, flow):
    """A parent's records naming keys that are not jobs' hashes (a stream, a string) and a
    ``parentKey`` naming a list: the tree reads them as missing, never as an outage."""
    p = prefixed_queues.prefix
    r = prefixed_queues.client
    r.sadd(f"{p}:flow-kids:pack-1:dependencies", f"{p}:flow-kids:events", f"{p}:flow-kids:stray")
    r.set(f"{p}:flow-kids:stray", "x")
    r.hset(f"{p}:flow-later:g-later", "parentKey", f"{p}:flow-later:wait")
    client.force_login(user_with("viewer"))
    html = flow_page(client, prefixed_queues, "flow-kids", "pack-1")
    shown = dict(NODE.findall(html))
    assert shown[f"{p}:flow-kids:events"] == shown[f"{p}:flow-kids:stray"] == "missing"
    assert shown[f"{p}:flow-kids:pack-1"] == "waiting-children"
    assert list(dict(NODE.findall(flow_page(client, prefixed_queues, "flow-later", "g-later")))) == [
        f"{p}:flow-later:g-later"
    ]
