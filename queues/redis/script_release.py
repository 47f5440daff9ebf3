"""The release gate before a script runs: the ``version`` each queue's ``meta`` records, read
with one pipelined ``HGET`` per queue, against the vendored scripts' release
(``queues.script_versions``)."""

from __future__ import annotations

import redis

from ..keys import QueueRef
from ..script_versions import check_release
from ..text import to_text
from .bullmq_scripts import SCRIPTS_VERSION


def recorded_release(client: redis.Redis, queue: QueueRef) -> str | None:
    raw = client.hget(queue.key("meta"), "version")
    return to_text(raw) if raw is not None else None


def require_supported(client: redis.Redis, *queues: QueueRef) -> None:
    """Raise ``UnsupportedRelease`` if a newer BullMQ than our scripts' wrote one of these queues."""
    pipe = client.pipeline(transaction=False)
    for queue in queues:
        pipe.hget(queue.key("meta"), "version")
    for raw in pipe.execute():
        check_release(to_text(raw) if raw is not None else None, SCRIPTS_VERSION)
