"""Reading the workers of BullMQ's PostgreSQL queues: the sessions BullMQ named in
``pg_stat_activity`` (``queues.workers.pg_worker_name`` is the naming rule), one statement per
period, as BullMQ's own ``get_client_list.sql`` reads them.

Node names a worker's session after the bare queue (no schema), so a Node worker of queue ``q``
counts for every monitored schema holding a ``q`` (BullMQ's ``getWorkers()`` cannot tell them
apart either); Python bullmq names it ``<schema>:<queue>``, which only its own schema's queue
matches. Python names both of a worker's sessions, so one Python worker is listed twice (as its
``getWorkers()`` lists it). Only sessions of this database are read. A role without
``pg_read_all_stats`` still sees other roles' session names, but not their address or start
time (the worker is listed with an empty address and age 0)."""

from __future__ import annotations

from ..keys import QueueRef
from ..workers import PG_NAME_BYTES, WORKER_SUFFIX, Worker, pg_client_names, pg_worker_name
from .connection import PostgresConnection

SESSIONS = """
SELECT application_name,
       COALESCE(host(client_addr) || ':' || client_port, CASE WHEN client_port = -1 THEN 'local' END, ''),
       COALESCE(extract(epoch FROM clock_timestamp() - backend_start)::bigint, 0),
       CASE WHEN state = 'idle' THEN COALESCE(extract(epoch FROM clock_timestamp() - state_change)::bigint, 0)
            ELSE 0 END
  FROM pg_stat_activity
 WHERE datname = current_database() AND application_name <> '' AND pid <> pg_backend_pid()
"""


def workers_by_queue(sessions: list[tuple[str, str, int, int]], queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
    """The workers of each of ``queues`` among ``sessions`` (application name, address, age s,
    idle s); every queue gets a list, empty when it has none."""
    out: dict[QueueRef, list[Worker]] = {q: [] for q in queues}
    by_base: dict[str, list[QueueRef]] = {}
    for q in queues:
        for base in pg_client_names(q):
            by_base.setdefault(base, []).append(q)
    for app, addr, age, idle in sessions:
        # The base is everything before the first ":w:" (a queue name may hold one: the whole
        # name is tried first); a name cut at 63 bytes is matched queue by queue.
        candidates = by_base.get(app) or by_base.get(app.split(WORKER_SUFFIX, 1)[0]) or []
        if not candidates and len(app.encode("utf-8")) >= PG_NAME_BYTES - 3:
            candidates = [q for q in queues if pg_worker_name(q, app) is not None]
        for q in dict.fromkeys(candidates):
            name = pg_worker_name(q, app)
            if name is not None:
                out[q].append(Worker(name, addr, int(age), int(idle), app))
    for workers in out.values():
        workers.sort(key=lambda w: (w.name, w.addr))
    return out


def read_workers(db: PostgresConnection, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
    return workers_by_queue([tuple(row) for row in db.rows(SESSIONS)], queues)
