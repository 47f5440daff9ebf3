"""The PostgreSQL kind shows flows as a tree and the flow actions as "not offered" (it has not
built them), without reaching its server."""

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec
from queues.errors import NotOffered
from queues.flows import FlowLimits
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources.factory import source_for


def test_postgres_does_not_offer_flow_trees_or_flow_actions():
    source = source_for(ConnectionSpec("pg", "postgresql://qw@127.0.0.1:1/bullmq", ("bullmq",)))
    queue = QueueRef("pg", "bullmq", "orders")
    with pytest.raises(NotOffered) as raised:
        source.jobs.flow(queue, "1", limits=FlowLimits(), from_root=True, redactor=Redactor())
    assert raised.value.facet == "flows as a tree"
    for act in (source.commands.remove_child_dependency, source.commands.remove_unprocessed_children):
        with pytest.raises(NotOffered):
            act(queue, job_id="1")
    source.close()
