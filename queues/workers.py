"""Workers per queue, from the names BullMQ gives its worker connections.

Node BullMQ 6.7 names a worker's blocking connection ``CLIENT SETNAME <prefix>:<base64(queue)>``,
or ``<prefix>:<base64(queue)>:w:<worker name>`` when the worker was given ``opts.name``
(``RedisQueueBackend.clientName``); Python bullmq uses the plain ``<prefix>:<queue>`` in the same
two shapes (``RedisBackend.clientName``). ``Queue.getWorkers()`` reads ``CLIENT LIST`` and keeps
the clients whose name is exactly the base or starts with ``<base>:w:`` (``QueueGetters.getWorkers``
in the Node dist, ``Queue.get_workers`` in the Python package). Queue-events readers end in
``:qe`` and are not workers. This module is the one home of that naming rule and of the parsing
of ``CLIENT LIST`` entries (``workers_by_queue``); a Redis node sends the command with
``queues.redis.workers.read_workers``."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from .keys import QueueRef

WORKER_SUFFIX = ":w:"


@dataclass(frozen=True)
class Worker:
    name: str  # the worker's ``opts.name``; "" for an unnamed worker
    addr: str  # ip:port of the worker's connection, as Redis sees it
    age_s: int  # seconds since the connection was opened
    idle_s: int  # seconds since its last command (a worker blocked waiting for jobs counts as busy)
    client: str = ""  # the connection's name as BullMQ set it (the health check's evidence)

    @property
    def age_ms(self) -> int:
        return self.age_s * 1000

    @property
    def idle_ms(self) -> int:
        return self.idle_s * 1000

    def as_dict(self) -> dict:
        return {"name": self.name, "addr": self.addr, "age_s": self.age_s, "idle_s": self.idle_s, "client": self.client}

    @classmethod
    def from_dict(cls, d: dict) -> Worker:
        return cls(
            str(d.get("name", "")),
            str(d.get("addr", "")),
            int(d.get("age_s", 0)),
            int(d.get("idle_s", 0)),
            str(d.get("client", "")),
        )


def client_name(queue: QueueRef) -> str:
    """The connection name Node BullMQ gives an unnamed worker of ``queue`` (``QueueBase.clientName()``)."""
    return f"{queue.prefix}:{base64.b64encode(queue.name.encode('utf-8')).decode('ascii')}"


def client_names(queue: QueueRef) -> tuple[str, str]:
    """The unnamed-worker connection names of ``queue``: Node BullMQ's, then Python bullmq's."""
    return client_name(queue), f"{queue.prefix}:{queue.name}"


def worker_name(queue: QueueRef, name: str) -> str | None:
    """The worker name ("" when unnamed) if the connection ``name`` is a worker of ``queue``, else None."""
    for base in client_names(queue):
        if name == base:
            return ""
        if name.startswith(base + WORKER_SUFFIX):
            return name[len(base) + len(WORKER_SUFFIX) :]
    return None


# PostgreSQL keeps at most NAMEDATALEN - 1 bytes of an ``application_name``.
PG_NAME_BYTES = 63


def pg_truncated(name: str) -> str:
    """``name`` as PostgreSQL stores it in ``application_name`` (cut at 63 bytes, whole characters)."""
    return name.encode("utf-8")[:PG_NAME_BYTES].decode("utf-8", "ignore")


def pg_client_names(queue: QueueRef) -> tuple[str, str]:
    """The names BullMQ's PostgreSQL backends give an unnamed worker's sessions of ``queue``:
    Node's (``createPostgresBackend``: the bare queue name, no schema) and Python's
    (``PostgresBackend.clientName``: ``<schema>:<queue>``)."""
    return queue.name, f"{queue.prefix}:{queue.name}"


def pg_worker_name(queue: QueueRef, application_name: str) -> str | None:
    """The worker name ("" when unnamed) if a PostgreSQL session named ``application_name`` is a
    worker of ``queue``, else None: exactly one of ``pg_client_names``, or one followed by
    ``:w:<worker name>``, as ``getWorkers()`` of either package matches. A name cut at 63 bytes
    still matches the queue it starts with (its worker name is then cut too, or lost)."""
    for base in pg_client_names(queue):
        named = base + WORKER_SUFFIX
        if application_name == base or application_name == pg_truncated(base):
            return ""
        if application_name.startswith(named):
            return application_name[len(named) :]
        if len(application_name.encode("utf-8")) >= PG_NAME_BYTES - 3 and pg_truncated(named) == application_name:
            return ""
    return None


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def workers_by_queue(clients: list[dict], queues: list[QueueRef], *, db: int = 0) -> dict[QueueRef, list[Worker]]:
    """The workers of each of ``queues`` among ``clients`` (``CLIENT LIST`` entries, as redis-py
    parses them). Only clients on database ``db`` count: a worker of a queue with the same
    prefix and name on another database works another queue. Every queue gets a list, empty
    when it has no worker."""
    # A dict from base name to queue: one lookup per client, whatever the number of queues.
    by_base = {base: q for q in queues for base in client_names(q)}
    out: dict[QueueRef, list[Worker]] = {q: [] for q in queues}
    for c in clients:
        name = str(c.get("name") or "")
        if not name or _int(c.get("db")) != db:
            continue
        # The base is everything before the first ":w:" (prefix and base64 never hold it; a
        # plain Python queue name might, so the whole name is tried first).
        q = by_base.get(name)
        if q is None:
            q = by_base.get(name.split(WORKER_SUFFIX, 1)[0])
        if q is None:
            continue
        out[q].append(
            Worker(worker_name(q, name) or "", str(c.get("addr", "")), _int(c.get("age")), _int(c.get("idle")), name)
        )
    for workers in out.values():
        workers.sort(key=lambda w: (w.name, w.addr))
    return out
