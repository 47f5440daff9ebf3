"""The PostgreSQL kind's connection-level checks: pure functions of ``PostgresFacts``
(``facts.py``), read by ``queues.postgres.health_facts``. Their catalogue entries are
``postgres_catalogue.py``."""

from __future__ import annotations

from ..messages import _
from .facts import PostgresFacts
from .postgres_catalogue import CONNECTIONS, DEAD_ROWS, EVENT_GROWTH, LONG_TRANSACTIONS, REACHABLE, SCHEMA_VERSION
from .results import FAIL, PASS, UNKNOWN, CheckResult, Thresholds
from .wording import format_age

# The newest schema version Queuewatch's reads are written for: BullMQ 6.7 (Node) migrates to 11,
# the Python package to 4. A newer one still works for BullMQ, but Queuewatch has not seen it.
KNOWN_SCHEMA_VERSION = 11
BULLMQ_MAJOR = 6  # the major Queuewatch reads; a schema requiring a newer one is not BullMQ 6's


def check_reachable(connection: str, error: str | None) -> CheckResult:
    if error:
        return CheckResult(REACHABLE, FAIL, connection, _("Cannot reach PostgreSQL: {error}.", error=error))
    return CheckResult(REACHABLE, PASS, connection, _("PostgreSQL answers."))


def check_schema_version(connection: str, facts: PostgresFacts) -> CheckResult:
    details = {
        "schemas": [
            {"schema": s.schema, "version": s.version, "min_client_version": s.min_client_version}
            for s in facts.schemas
        ],
        "known_version": KNOWN_SCHEMA_VERSION,
    }
    missing = [s.schema for s in facts.schemas if s.version is None]
    if missing:
        return CheckResult(
            SCHEMA_VERSION,
            FAIL,
            connection,
            _(
                "No BullMQ schema (no migration table) in: {schemas}. BullMQ has never been migrated "
                "there, so it holds no queue.",
                schemas=", ".join(missing),
            ),
            severity="critical",
            details=details,
        )
    newer = [s for s in facts.schemas if (s.version or 0) > KNOWN_SCHEMA_VERSION]
    requires = [s for s in facts.schemas if (s.min_client_version or 0) > BULLMQ_MAJOR]
    if newer or requires:
        found = [
            _(
                "{schema} is at schema version {version}, newer than the {known} Queuewatch knows",
                schema=s.schema,
                version=s.version,
                known=KNOWN_SCHEMA_VERSION,
            )
            for s in newer
        ] + [
            _(
                "{schema} requires BullMQ {major} or newer",
                schema=s.schema,
                major=s.min_client_version,
            )
            for s in requires
        ]
        return CheckResult(
            SCHEMA_VERSION,
            FAIL,
            connection,
            _("{found}: Queuewatch may read it wrongly.", found="; ".join(found)),
            details=details,
        )
    versions = ", ".join(f"{s.schema} {s.version}" for s in facts.schemas)
    known = _("BullMQ schema version known: {versions}.", versions=versions)
    return CheckResult(SCHEMA_VERSION, PASS, connection, known, details=details)


def check_long_transactions(connection: str, facts: PostgresFacts, th: Thresholds) -> CheckResult:
    long = facts.long_transactions
    details = {
        "threshold_ms": th.long_transaction_ms,
        "transactions": [
            {
                "pid": t.pid,
                "user": t.user,
                "application": t.application,
                "state": t.state,
                "age_ms": t.age_ms,
                "locks_bullmq_tables": t.locks_bullmq,
            }
            for t in long[:10]
        ],
        "sees_all_sessions": facts.sees_all_sessions,
        "hidden_sessions": facts.hidden_sessions,
    }
    if long:
        oldest = max(long, key=lambda t: t.age_ms)
        listed = ", ".join(
            f"pid {t.pid} ({t.application or t.user}, {t.state or '?'}, {format_age(t.age_ms)})" for t in long[:5]
        )
        holding = sum(1 for t in long if t.locks_bullmq)
        return CheckResult(
            LONG_TRANSACTIONS,
            FAIL,
            connection,
            _(
                "{n} transaction(s) open longer than {limit}, the oldest {age}; {holding} hold locks on "
                "BullMQ tables: {listed}.",
                n=len(long),
                limit=format_age(th.long_transaction_ms),
                age=format_age(oldest.age_ms),
                holding=holding,
                listed=listed,
            ),
            details=details,
        )
    if facts.hidden_sessions and not facts.sees_all_sessions:
        return CheckResult(
            LONG_TRANSACTIONS,
            UNKNOWN,
            connection,
            _(
                "None of the sessions Queuewatch can see is in a long transaction, but {n} session(s) of "
                "other roles are hidden from it: grant its role `pg_monitor` to judge them.",
                n=facts.hidden_sessions,
            ),
            details=details,
        )
    return CheckResult(
        LONG_TRANSACTIONS,
        PASS,
        connection,
        _("No transaction open longer than {limit}.", limit=format_age(th.long_transaction_ms)),
        details=details,
    )


def check_connections(connection: str, facts: PostgresFacts, th: Thresholds) -> CheckResult:
    usable = max(1, facts.max_connections - facts.reserved_connections)
    ratio = facts.connections / usable
    details = {
        "connections": facts.connections,
        "max_connections": facts.max_connections,
        "reserved_connections": facts.reserved_connections,
        "ratio": round(ratio, 3),
    }
    found = _(
        "{used} of {usable} connections in use ({percent}%; max_connections {max}, {reserved} reserved).",
        used=facts.connections,
        usable=usable,
        percent=round(ratio * 100),
        max=facts.max_connections,
        reserved=facts.reserved_connections,
    )
    if ratio >= th.connections_critical:
        return CheckResult(CONNECTIONS, FAIL, connection, found, severity="critical", details=details)
    if ratio >= th.connections_warning:
        return CheckResult(CONNECTIONS, FAIL, connection, found, details=details)
    return CheckResult(CONNECTIONS, PASS, connection, found, details=details)


def check_dead_rows(connection: str, facts: PostgresFacts, now: int, th: Thresholds) -> CheckResult:
    details = {
        "tables": [
            {
                "schema": t.schema,
                "live_rows": t.live_rows,
                "dead_rows": t.dead_rows,
                "last_autovacuum_age_ms": None if t.last_autovacuum_ms is None else max(0, now - t.last_autovacuum_ms),
            }
            for t in facts.job_tables
        ],
        "thresholds": {"ratio": th.dead_rows_ratio, "min": th.dead_rows_min},
    }
    bloated = [
        t
        for t in facts.job_tables
        if t.dead_rows >= th.dead_rows_min and t.dead_rows >= th.dead_rows_ratio * max(1, t.live_rows)
    ]
    if bloated:
        listed = "; ".join(
            _(
                "{schema}.job: {dead} dead rows beside {live} live, last vacuumed {ago}",
                schema=t.schema,
                dead=t.dead_rows,
                live=t.live_rows,
                ago=_("never")
                if t.last_autovacuum_ms is None
                else _("{age} ago", age=format_age(max(0, now - t.last_autovacuum_ms))),
            )
            for t in bloated
        )
        return CheckResult(
            DEAD_ROWS, FAIL, connection, _("Autovacuum is behind: {listed}.", listed=listed), details=details
        )
    dead = sum(t.dead_rows for t in facts.job_tables)
    return CheckResult(
        DEAD_ROWS, PASS, connection, _("{n} dead job rows: autovacuum keeps up.", n=dead), details=details
    )


def check_event_growth(connection: str, facts: PostgresFacts) -> CheckResult:
    """Queues whose ``event`` rows are past what BullMQ's trimming keeps (``health_facts``
    counts only the queues whose id span could be; the rest pass for free)."""
    streams = facts.event_streams
    details = {
        "queues": [
            {"schema": e.schema, "queue": e.queue, "max_len": e.max_len, "rows": e.rows, "counted_to": e.counted_to}
            for e in streams[:20]
        ],
        "tables": [{"schema": t.schema, "live_rows": t.live_rows} for t in facts.event_tables],
    }
    grown = [e for e in streams if e.rows is not None and e.rows >= e.counted_to]
    if grown:
        listed = "; ".join(
            _(
                "{schema}/{queue}: more than {rows} rows, kept to {max_len}",
                schema=e.schema,
                queue=e.queue,
                rows=e.counted_to - 1,
                max_len=e.max_len,
            )
            if e.max_len > 0
            else _(
                "{schema}/{queue}: more than {rows} rows, every event kept (maxLenEvents {max_len})",
                schema=e.schema,
                queue=e.queue,
                rows=e.counted_to - 1,
                max_len=e.max_len,
            )
            for e in grown[:5]
        )
        more = len(grown) - 5
        summary = _("The event table grows without trimming: {listed}.", listed=listed)
        if more > 0:
            summary = _("{summary} And {n} more queue(s).", summary=summary, n=more)
        return CheckResult(EVENT_GROWTH, FAIL, connection, summary, details=details)
    uncounted = [e for e in streams if e.rows is None]
    if uncounted:
        return CheckResult(
            EVENT_GROWTH,
            UNKNOWN,
            connection,
            _(
                "{n} queue(s) have a wide span of events not counted this time (the count's budget was spent).",
                n=len(uncounted),
            ),
            details=details,
        )
    rows = sum(t.live_rows for t in facts.event_tables)
    return CheckResult(
        EVENT_GROWTH,
        PASS,
        connection,
        _("Every queue's events are trimmed to its length (about {n} rows in all).", n=rows),
        details=details,
    )


def judge_server(connection: str, facts: PostgresFacts, now: int, th: Thresholds) -> list[CheckResult]:
    return [
        check_reachable(connection, None),
        check_schema_version(connection, facts),
        check_long_transactions(connection, facts, th),
        check_connections(connection, facts, th),
        check_dead_rows(connection, facts, now, th),
        check_event_growth(connection, facts),
    ]
