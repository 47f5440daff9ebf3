"""A job's stack traces on its page, as real Node BullMQ 6.7 keeps them: ``Job.updateStacktrace``
appends each failure's trace and keeps only the newest ``stackTraceLimit``, so the traces shown
are not "attempt 1…n". The page names them from the newest back and says how many BullMQ keeps."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


def test_traces_kept_by_stack_trace_limit_are_named_from_the_latest_failure_back(logged_in, prefixed_queues):
    added = run_node(
        "toolbox.mjs",
        "add",
        prefixed_queues.url,
        "traces",
        json.dumps([{"name": "flaky", "data": {"fail": 9}, "opts": {"attempts": 4, "stackTraceLimit": 2}}]),
        prefix=prefixed_queues.prefix,
    )
    job_id = added["ids"][0]
    ran = run_node("toolbox.mjs", "run", prefixed_queues.url, "traces", "1", "9", prefix=prefixed_queues.prefix)
    assert ran["jobs"][job_id]["state"] == "failed" and ran["jobs"][job_id]["atm"] == 4
    html = logged_in.get(reverse("job", args=[*prefixed_queues.args("traces"), job_id])).content.decode()
    traces = html[html.index("Stack traces") :]
    # BullMQ kept failures 3 and 4 of the 4 attempts; the newest is last and open.
    assert traces.index("planned failure 3") < traces.index("planned failure 4")
    assert "planned failure 2" not in html and "Attempt 1" not in html
    assert "1 failure before the latest" in html and "Latest failure" in html
    assert "BullMQ keeps only the newest 2 stack traces of this job" in html
