"""An in-memory source kind, added only to ``queues.sources.factory.SOURCE_KINDS``: the recipe of
docs/sources.md followed by a test. It offers the core members (discovery, snapshots, errors)
and no facet, which is how a new kind starts."""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

from queues.connections import ConnectionSpec
from queues.errors import SourceUnavailable
from queues.keys import QueueRef
from queues.snapshot import COUNT_STATES, QueueSnapshot
from queues.sources import UnsupportedBySource, factory

# Counts nobody would type by accident, so finding them in a page proves where they came from.
STORED = {"orders": {"waiting": 9173, "failed": 4421}, "emails": {"completed": 55501}}


class StoreOffline(Exception):
    """The in-memory kind's own failure, which only its ``errors()`` knows how to translate."""


class MemorySource:
    kind = "memory"
    label = "in-memory store"
    schemes = ("memory",)

    # No facet yet: job pages, actions, probes… are "not offered".
    jobs = probes = commands = schedulers = bulk = server = job_tools = dedup = figures = None

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0):
        self.spec = spec
        self.offline = urlsplit(spec.url).netloc == "offline"

    @classmethod
    def check_url(cls, url: str) -> None:
        if not urlsplit(url).netloc:
            raise ValueError("name the store, e.g. memory://shop")

    def discover(self) -> list[QueueRef]:
        if self.offline:
            raise StoreOffline()
        return [QueueRef(self.spec.name, prefix, name) for prefix in self.spec.prefixes for name in sorted(STORED)]

    def queue_exists(self, queue: QueueRef) -> bool:
        return queue in self.discover()

    def snapshots(self, queues: list[QueueRef]) -> list[QueueSnapshot]:
        if self.offline:
            raise StoreOffline()
        return [
            QueueSnapshot(
                queue=q, counts={s: STORED[q.name].get(s, 0) for s in COUNT_STATES}, paused=False, schedulers=0
            )
            for q in queues
        ]

    def events_follower(self, *, block_ms: int):
        raise UnsupportedBySource(kind=self.kind, connection=self.spec.name, what="events follower")

    def workers(self, queues: list[QueueRef]):
        raise UnsupportedBySource(kind=self.kind, connection=self.spec.name, what="worker connections")

    @contextlib.contextmanager
    def errors(self):
        try:
            yield
        except StoreOffline:
            raise SourceUnavailable(self.spec.name, "the in-memory store is offline") from None

    def close(self) -> None:
        pass


def register_memory_kind(monkeypatch) -> None:
    """The one line of the recipe: the kind's entry in the factory's table."""
    monkeypatch.setattr(factory, "SOURCE_KINDS", (*factory.SOURCE_KINDS, MemorySource))
