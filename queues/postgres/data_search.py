"""Finding jobs by a field of their data on PostgreSQL (``queues.data_search``).

One step is one statement over the state's window in display order (``OFFSET start LIMIT
scan_limit``, the ordering index of ``STATE_ROWS``): the jsonb column is narrowed in the
database to the rows whose data has the path (and, when only text can match, holds the value
as text, ``#>>``), at most ``MAX_MATCHES`` of them, each with its position and its data
when it is within the size searched. The rule itself stays ``DataQuery.matches`` on the
redacted data, as on Redis, so a hidden value is never confirmed by a guess. Rows over the size
searched are counted as ``too_large`` (only the narrowed ones: the others cannot match).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psycopg import sql

from ..data_search import MAX_MATCHES, DataQuery, DataSearch
from ..jobs import JobSummary
from ..keys import QueueRef
from ..redact import Redactor
from ..safe_json import parse_json
from .snapshots import table

# Queuewatch's state → (the rows in it, their display order), as the jobs facet reads them.
StateRows = dict[str, tuple[str, str]]


def search_data(
    rows: Callable[[sql.Composed, list[Any]], list[tuple]],
    summaries: Callable[[list[str], list[float] | None], list[JobSummary]],
    state_rows: StateRows,
    queue: QueueRef,
    state: str,
    *,
    total: int,
    query: DataQuery,
    offset: int,
    scan_limit: int,
    data_cap: int,
    redactor: Redactor,
    score: Callable[[int | None], float | None],
) -> DataSearch:
    found = DataSearch(state, query, start=max(0, offset), examined=max(0, offset), in_state=total)
    end = min(total, found.start + max(0, scan_limit))
    if state not in state_rows or found.start >= end:
        return found
    where, order = state_rows[state]
    narrow = sql.SQL("data #>> %s = %s") if query.text_only() else sql.SQL("data #> %s IS NOT NULL")
    statement = sql.SQL(
        "SELECT pos, id, process_at_ms, CASE WHEN octet_length(data::text) <= %s THEN data::text END"
        " FROM (SELECT id, process_at_ms, data, row_number() OVER (ORDER BY {order}) AS pos"
        " FROM {job} WHERE queue = %s AND {where} ORDER BY {order} OFFSET %s LIMIT %s) AS window_rows"
        " WHERE {narrow} ORDER BY pos LIMIT %s"
    ).format(order=sql.SQL(order), job=table(queue.prefix, "job"), where=sql.SQL(where), narrow=narrow)
    params: list[Any] = [data_cap, queue.name, found.start, end - found.start, list(query.path)]
    if query.text_only():
        params.append(query.value)
    params.append(MAX_MATCHES)
    candidates = rows(statement, params)
    hits, hit_scores = [], []
    for _pos, job_id, due_ms, raw in candidates:
        if raw is None:
            found.too_large += 1
            continue
        ok, value = parse_json(raw)
        if ok and query.matches(redactor.value(value)):
            hits.append(job_id)
            hit_scores.append(score(due_ms) or 0.0)
    # Stopped at MAX_MATCHES candidates: the next step goes on after the last one read.
    found.examined = int(candidates[-1][0]) if len(candidates) >= MAX_MATCHES else end
    if hits:
        known = hit_scores if state == "delayed" else None
        found.matches = [j for j in summaries(hits, known) if j.exists]
    return found
