"""Reading a Redis node's workers: one ``CLIENT LIST``, matched to queues by BullMQ's naming rule
(``queues.workers``, its one home; the health check ``queue.no_workers`` judges the monitor's
reading, or reads with ``read_workers`` itself).

The monitor reads ``CLIENT LIST`` once per connection per period (``read_workers``), never per
request or per tab: one command whose reply is about 350 bytes per client connected to that
Redis server (all databases), so 1,000 clients cost about 350 KB every period.
"""

from __future__ import annotations

from ..keys import QueueRef
from ..text import to_int
from ..workers import Worker, workers_by_queue


def read_workers(client, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
    """One ``CLIENT LIST`` on ``client``'s server, matched to ``queues`` (all on that connection).
    Raises ``redis.RedisError`` when the server refuses it (some managed services do): the
    caller then shows the workers as unknown, not as none."""
    db = to_int(client.connection_pool.connection_kwargs.get("db", 0), 0) or 0
    return workers_by_queue(client.client_list(), queues, db=db)
