"""What a page watches, as stored for the monitor: one format, parsed and written in one place."""

from __future__ import annotations

import pytest

from dashboard.live.channels import SEP, Watch
from queues.keys import QueueRef

QUEUE = QueueRef("default", "bull", "orders:eu")


@pytest.mark.parametrize("item", [Watch.queue_page(QUEUE), Watch.job_list(QUEUE, "failed"), Watch.job(QUEUE, "a:b/c 1")])
def test_a_watch_survives_its_stored_form(item):
    assert Watch.parse(item.member()) == item


@pytest.mark.parametrize("member", [
    SEP.join(("list", "default", "bull", "orders")),  # too short: no state
    SEP.join(("page", "default", "bull", "orders", "1")),  # not a kind the monitor renders
    SEP.join(("job", "default", "bull", "orders", "a", "b")),  # the separator inside a part
])
def test_malformed_members_are_ignored(member):
    assert Watch.parse(member) is None
