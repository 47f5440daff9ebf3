"""Pages over queues written by real Node BullMQ: overview, queue tabs, job page, schedulers."""
# Literal `bull:` keys kept: the session's Node-built queues (build_fixture.mjs, prefixes 'bull', '{app:bull}').

from __future__ import annotations

from html import unescape
from urllib.parse import quote

import pytest
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from queues.connections import ConnectionSpec
from tests.support.redis_db import point_at
from tests.support.servers import refused_port

pytestmark = [pytest.mark.node, pytest.mark.django_db]


def queue_url(queue_name, prefix="bull", **params):
    url = reverse("queue", args=["default", prefix, queue_name])
    return url + ("?" + "&".join(f"{k}={quote(str(v))}" for k, v in params.items()) if params else "")


def job_url(name, job_id, prefix="bull"):
    return reverse("job", args=["default", prefix, name, job_id])


def test_overview_lists_every_queue_with_counts_and_paused_badge(logged_in, node_queues):
    html = logged_in.get(reverse("overview")).content.decode()
    for q in node_queues["queues"]:
        assert f">{q['name']}</a>" in html
    assert 'class="badge paused"' in html
    assert "{app:bull}" in html


def test_overview_filter_and_sort(logged_in, node_queues):
    html = logged_in.get(reverse("overview"), {"q": "pause"}).content.decode()
    assert ">paused-q</a>" in html and ">mixed</a>" not in html
    html = logged_in.get(reverse("overview"), {"sort": "failed", "dir": "desc"}).content.decode()
    # mixed has the most failed jobs, so it comes first within the default connection.
    first = html.index(">mixed</a>")
    assert all(first < html.index(f">{n}</a>") for n in ("stacky", "paused-q", "flows"))
    html = logged_in.get(reverse("overview"), {"sort": "name"}).content.decode()
    assert html.index(">dedup</a>") < html.index(">flows</a>") < html.index(">mixed</a>")


def test_overview_htmx_request_gets_only_the_table(logged_in, node_queues):
    html = logged_in.get(reverse("overview"), {"q": "mix"}, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="queue-tables"') and "<html" not in html


def test_unreachable_connection_shows_banner_while_others_work(logged_in, settings, node_queues, node_fixture_db):
    point_at(
        settings,
        ConnectionSpec("default", node_fixture_db.url, ("bull", "{app:bull}")),
        ConnectionSpec("broken", f"redis://:hunter2@127.0.0.1:{refused_port()}/0", ("bull",)),
    )
    response = logged_in.get(reverse("overview"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Cannot reach connection “broken”" in html
    assert ">mixed</a>" in html
    assert "hunter2" not in html
    reset_registry()


def test_failed_tab_lists_light_fields_newest_first(logged_in, node_queues, node_fixture_client):
    html = logged_in.get(queue_url("mixed", state="failed")).content.decode()
    assert "boom 3" in html and "fatal: bad input" in html
    # Finished states are newest first (highest finishedOn score first).
    newest_first = [i.decode() for i in node_fixture_client.zrevrange("bull:mixed:failed", 0, -1)]
    positions = [html.index(quote_id(i)) for i in newest_first]
    assert positions == sorted(positions)
    assert "2 / 2" in html  # attempts made / allowed
    # Lists never carry payloads or stack traces.
    assert "at async" not in html and "stacktrace" not in html


def test_waiting_tab_is_in_run_order_and_paginates(logged_in, node_queues, node_fixture_client):
    client = node_fixture_client
    run_order = [i.decode() for i in reversed(client.lrange("bull:mixed:wait", 0, -1))]
    html = logged_in.get(queue_url("mixed", state="waiting", size=10)).content.decode()
    positions = [html.index(quote_id(i)) for i in run_order]
    assert positions == sorted(positions)
    # A page of 10 over 5 jobs has no next page.
    assert "Next →" not in html


def quote_id(job_id):
    from django.utils.html import escape

    return f'<code class="qw-id" title="{escape(job_id)}" dir="ltr">{escape(job_id)}</code>'


def test_every_tab_renders(logged_in, node_queues):
    for state in ("waiting", "active", "prioritized", "delayed", "waiting-children", "completed", "failed"):
        response = logged_in.get(queue_url("mixed", state=state))
        assert response.status_code == 200, state


def test_prioritized_and_delayed_tabs_show_priority_and_due(logged_in, node_queues):
    html = logged_in.get(queue_url("mixed", state="prioritized")).content.decode()
    assert html.index('<td class="num" data-label="Priority">1</td>') < html.index(
        '<td class="num" data-label="Priority">100</td>'
    )
    html = logged_in.get(queue_url("mixed", state="delayed")).content.decode()
    # Due times are about an hour ahead (score = due_ms * 4096 + seq), rendered as <time>.
    import datetime as dt
    import re

    dues = [dt.datetime.fromisoformat(m) for m in re.findall(r'<time class="rel" datetime="([^"]+)"', html)]
    now = dt.datetime.now(dt.UTC)
    assert sum(50 * 60 < (d - now).total_seconds() < 61 * 60 for d in dues) == 3


def test_name_filter(logged_in, node_queues, node_fixture_client):
    client = node_fixture_client
    ids = [i.decode() for i in client.zrange("bull:mixed:completed", 0, -1)]
    names = {i: client.hget(f"bull:mixed:{i}", "name").decode() for i in ids}
    assert len(set(names.values())) > 1, "fixture should have several job names"
    name = sorted(set(names.values()))[0]
    html = logged_in.get(queue_url("mixed", state="completed", name=name)).content.decode()
    assert f"Jobs named like “{name}”" in html
    for job_id, job_name in names.items():
        assert (quote_id(job_id) in html) == (job_name == name)


def test_open_job_by_id_redirects_and_unknown_id_is_404(logged_in, node_queues):
    response = logged_in.get(queue_url("mixed", job="order:eu:42"))
    assert response.status_code == 302 and response["Location"] == job_url("mixed", "order:eu:42")
    response = logged_in.get(queue_url("mixed", job="nope-404"))
    assert response.status_code == 404 and "Job 'nope-404' was not found" in unescape(response.content.decode())


def test_job_page_shows_stack_traces_logs_progress_and_timeline(logged_in, node_queues):
    failed = [
        (k, v) for k, v in node_queues["jobs"].items() if k.startswith("bull/mixed/") and len(v["stacktrace"]) == 2
    ]
    job_id = failed[0][0].split("/", 2)[2]
    html = logged_in.get(job_url("mixed", job_id)).content.decode()
    assert "badge state-failed" in html and "Latest failure" in html and "1 failure before the latest" in html
    assert "boom" in html and "Attempt 1" not in html
    assert "created" in html and "finished (failed)" in html
    html = logged_in.get(job_url("mixed", "order:eu:42")).content.decode()
    assert "Logs" in html and "Progress" in html


def test_non_ascii_job_id(logged_in, node_queues):
    response = logged_in.get(job_url("mixed", "ünïcode-ジョブ"))
    assert response.status_code == 200 and "ünïcode-ジョブ" in response.content.decode()


def test_flow_links_parent_and_children(logged_in, node_queues):
    html = logged_in.get(job_url("flows", "flow-parent")).content.decode()
    assert "Pending children (2)" in html
    assert job_url("flows", "flow-child-1") in html
    html = logged_in.get(job_url("flows", "flow-child-1")).content.decode()
    assert job_url("flows", "flow-parent") in html


def test_custom_braced_prefix_queue_and_job(logged_in, node_queues):
    response = logged_in.get(queue_url("custom", prefix="{app:bull}", state="failed"))
    assert response.status_code == 200
    assert reverse("queue", args=["default", "{app:bull}", "custom"]) in response.content.decode()


def test_unknown_queue_connection_and_prefix_are_404_with_a_message(logged_in, node_queues):
    r = logged_in.get(reverse("queue", args=["default", "bull", "no-such-queue"]))
    assert r.status_code == 404 and "No queue 'no-such-queue'" in unescape(r.content.decode())
    r = logged_in.get(reverse("queue", args=["nope", "bull", "mixed"]))
    assert r.status_code == 404 and "No Redis connection named 'nope'" in unescape(r.content.decode())
    r = logged_in.get(reverse("queue", args=["default", "other", "mixed"]))
    assert r.status_code == 404


def test_schedulers_pages(logged_in, node_queues):
    html = logged_in.get(reverse("schedulers")).content.decode()
    assert "0 */5 * * * *" in html and "Europe/Berlin" in html and "every 1 min" in html
    html = logged_in.get(reverse("queue_schedulers", args=["default", "bull", "sched"])).content.decode()
    assert "Europe/Berlin" in html


@pytest.mark.parametrize("job_id", ["a:b/c", "ünï ジョブ", "x?y#z%20", "repeat:s:123", "a&b=c"])
def test_fast_job_links_equal_reverse(job_id):
    from dashboard.web.links import job_url
    from queues.keys import QueueRef

    q = QueueRef("default", "{app:bull}", "q")
    assert job_url(q, job_id) == reverse("job", args=[q.connection, q.prefix, q.name, job_id])
