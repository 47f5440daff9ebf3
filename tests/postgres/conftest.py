"""Queues built by real Node BullMQ 6.7 on PostgreSQL, once per session (one per pytest-xdist
worker), in a database of their own on the session's private PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from queues.keys import QueueRef
from queues.sources import ConnectionSpec, source_for
from tests.support.servers import run_node

SCHEMAS = ("bullmq", "other")


@dataclass(frozen=True)
class NodeBuilt:
    url: str
    report: dict  # what pg_fixture.mjs printed: getJobCounts() per queue, job ids, job details

    def spec(self, name: str = "pg") -> ConnectionSpec:
        return ConnectionSpec(name, self.url, SCHEMAS)

    def queue(self, name: str, schema: str = "bullmq", connection: str = "pg") -> QueueRef:
        return QueueRef(connection, schema, name)

    def reported(self, name: str) -> dict:
        return next(q for q in self.report["queues"] if q["name"] == name)


@pytest.fixture(scope="session")
def pg_bullmq(postgres_server) -> NodeBuilt:
    url = postgres_server.create_database("node_built")
    return NodeBuilt(url, run_node("pg_fixture.mjs", url))


@pytest.fixture
def pg_source(pg_bullmq):
    source = source_for(pg_bullmq.spec())
    yield source
    source.close()
