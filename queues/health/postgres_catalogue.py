"""The PostgreSQL kind's own connection-level health checks: its entries in the health catalogue
(``queues/health/catalogue.py``), registered when this module is imported. The checks that judge
them are ``queues/health/postgres_checks.py``; the facts are read by
``queues/postgres/health_facts.py``."""

from __future__ import annotations

from ..messages import _
from .catalogue import Check, register_checks

REACHABLE, SCHEMA_VERSION, LONG_TRANSACTIONS, CONNECTIONS, DEAD_ROWS, EVENT_GROWTH = (
    "postgres.reachable",
    "postgres.schema_version",
    "postgres.long_transactions",
    "postgres.connections",
    "postgres.dead_rows",
    "postgres.event_growth",
)

POSTGRES_CHECKS = register_checks(
    Check(
        REACHABLE,
        "connection",
        _("PostgreSQL reachable"),
        "critical",
        _(
            "Queuewatch could not run a query on this PostgreSQL database. If workers cannot either, "
            "no job is added, processed or finished."
        ),
        _(
            "Check that the server is up and that the URL's host, port, database, user, password "
            "and sslmode are right (and that pg_hba.conf lets this host in)."
        ),
        source="postgres",
    ),
    Check(
        SCHEMA_VERSION,
        "connection",
        _("BullMQ schema version"),
        "warning",
        _(
            "BullMQ keeps its PostgreSQL tables at a schema version recorded in the schema's "
            "`migration` table. Without that schema no queue exists and every worker refuses to "
            "start; a schema migrated by a newer BullMQ than Queuewatch knows may have tables "
            "Queuewatch reads wrongly, and one that requires a newer BullMQ major makes older "
            "workers refuse to start."
        ),
        _(
            "A missing schema: start a Queue or Worker with `migrate: true` on its connection, or "
            "run BullMQ's `runMigrations()`, and check the URL's `schema` parameter. A newer "
            "schema: upgrade Queuewatch (and every BullMQ client) to a release that knows it."
        ),
        source="postgres",
    ),
    Check(
        LONG_TRANSACTIONS,
        "connection",
        _("Long transactions"),
        "warning",
        _(
            "A transaction left open keeps the row locks it took — a job row it locked cannot be "
            "moved by any worker — and holds back vacuum for the whole database, so finished and "
            "moved job rows pile up as dead rows and every job query slows down."
        ),
        _(
            "Find the session in `pg_stat_activity` (its pid, application and query are listed), "
            "fix the code that leaves its transaction open (often `idle in transaction`), and end it "
            "with `SELECT pg_terminate_backend(pid)` if needed. Setting "
            "`idle_in_transaction_session_timeout` stops it happening again. To see other roles' "
            "sessions, grant Queuewatch's role `pg_monitor`."
        ),
        source="postgres",
    ),
    Check(
        CONNECTIONS,
        "connection",
        _("Connection headroom"),
        "warning",
        _(
            "Every BullMQ Queue, Worker and QueueEvents holds PostgreSQL connections. At "
            "`max_connections` the server refuses new ones: workers that restart or scale out "
            "cannot connect, and producers fail to add jobs."
        ),
        _(
            "Put a pooler (PgBouncer in session mode for LISTEN) in front, lower the BullMQ pool "
            "sizes, or raise `max_connections` (a restart is needed)."
        ),
        source="postgres",
    ),
    Check(
        DEAD_ROWS,
        "connection",
        _("Dead job rows"),
        "warning",
        _(
            "Every job move rewrites its row and leaves a dead one behind until autovacuum removes "
            "it. When autovacuum falls behind (or a long transaction blocks it), the job table "
            "bloats and every fetch of the next job reads more pages."
        ),
        _(
            "Check that autovacuum runs (`last_autovacuum` in `pg_stat_user_tables`), end long "
            "transactions, and make autovacuum eager on the job table: `ALTER TABLE bullmq.job SET "
            "(autovacuum_vacuum_scale_factor = 0.02)`."
        ),
        source="postgres",
    ),
    Check(
        EVENT_GROWTH,
        "connection",
        _("Event table growth"),
        "warning",
        _(
            "BullMQ appends a row to the `event` table for every job move and trims each queue's "
            "rows to its `maxLenEvents` (10,000 unless set) as new events arrive. A queue whose "
            "rows go past that is not being trimmed (`maxLenEvents` set to 0 keeps every event): "
            "the table grows without bound, and every reader of events and every trim gets slower."
        ),
        _(
            "Give the queue a positive `streams.events.maxLen` in its Queue options (BullMQ stores it "
            "as `opts.maxLenEvents`) and let its producers run once so it is stored; delete the rows "
            "beyond it once with `DELETE FROM bullmq.event WHERE queue = '<queue>' AND id <= "
            "(SELECT max(id) FROM bullmq.event WHERE queue = '<queue>') - <maxLen>`."
        ),
        source="postgres",
    ),
)
