"""Finding jobs by a field of their data on Redis (``queues.data_search``).

Walks one state in the order its job list shows, reading each job's ``data`` field in pipelined
pages that grow while pages stay small in bytes (``export.next_page_size``). Cost of one step:
one ``HGET`` per job examined (at most ``scan_limit``), a range read per page, the length, and
one ``HMGET`` of light fields per match — whatever the size of the state.
"""

from __future__ import annotations

import redis

from ..data_search import MAX_MATCHES, DataQuery, DataSearch
from ..keys import QueueRef
from ..redact import Redactor
from ..safe_json import parse_json
from .export import FIRST_PAGE, next_page_size
from .jobs import read_summaries
from .listing import _range_ids, state_length


def search_data(
    client: redis.Redis,
    queue: QueueRef,
    state: str,
    *,
    query: DataQuery,
    offset: int,
    scan_limit: int,
    data_cap: int,
    redactor: Redactor,
) -> DataSearch:
    total = state_length(client, queue, state)
    found = DataSearch(state, query, start=max(0, offset), examined=max(0, offset), in_state=total)
    end = min(total, found.start + scan_limit)
    size = FIRST_PAGE
    while found.examined < end and len(found.matches) < MAX_MATCHES:
        count = min(size, end - found.examined)
        ids, scores = _range_ids(client, queue, state, found.examined, found.examined + count - 1)
        found.examined += count
        if not ids:
            continue
        pipe = client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hget(queue.job_key(job_id), "data")
        hits, hit_scores, field_bytes = [], [], 0
        for i, (job_id, raw) in enumerate(zip(ids, pipe.execute())):
            if raw is None:
                continue
            field_bytes += len(raw)
            if len(raw) > data_cap:
                found.too_large += 1
                continue
            ok, value = parse_json(raw)
            if ok and query.matches(redactor.value(value)):
                hits.append(job_id)
                hit_scores.append(scores[i] if scores is not None else None)
        if hits:
            known = hit_scores if scores is not None else None
            found.matches += [j.redacted(redactor) for j in read_summaries(client, queue, hits, known) if j.exists]
        size = next_page_size(size, len(ids), field_bytes)
    return found
