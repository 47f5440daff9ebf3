"""Export jobs matching a filter as JSON Lines or CSV, streamed, with redaction.

Generators yield one chunk (``str``: the lines of one page of jobs) per page read from Redis,
so a web view can stream them whatever the number of jobs: the first chunk can be sent before
the second page is read, and memory holds one page. Payloads are parsed
and redacted with ``queues.redact``, page by page; text that is not JSON is redacted as text.

Pages grow: the first is ``FIRST_PAGE`` jobs (a small read and little redaction, so the first
byte leaves quickly however large the jobs), each next one twice the last, up to ``MAX_PAGE``
jobs and to about ``PAGE_BYTES`` of job fields: few round trips for the bulk of a large
export, while the web process holds one page's data, parsed, redacted and encoded. A download
to a client that stops reading holds about that much (the web server waits for the socket
before asking for more), so the per-user download cap bounds the bytes one user keeps in
flight. The byte budget is judged from the page before (sizes are not known before the read):
where small jobs give way to much larger ones, one page can hold more before the next shrinks;
a job larger than the budget is still read whole (a page is never less than one job).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import redis

from ..keys import QueueRef
from ..redact import Redactor
from ..safe_json import parse_json
from ..selection import Cursor, JobFilter, advance
from ..text import to_int, to_text
from .selection import next_page

EXPORT_FIELDS = (
    "name",
    "data",
    "opts",
    "timestamp",
    "processedOn",
    "finishedOn",
    "atm",
    "ats",
    "stc",
    "failedReason",
    "stacktrace",
    "returnvalue",
)
CSV_COLUMNS = (
    "id",
    "name",
    "timestamp",
    "processedOn",
    "finishedOn",
    "attemptsMade",
    "attemptsStarted",
    "stalledCounter",
    "failedReason",
    "data",
    "opts",
    "stacktrace",
    "returnvalue",
)
FIRST_PAGE = 10
MAX_PAGE = 250
PAGE_BYTES = 512 * 1024


def next_page_size(size: int, jobs: int, field_bytes: int) -> int:
    """The size after a page of ``size`` that read ``jobs`` jobs holding ``field_bytes`` bytes
    of fields: twice as many, at most ``MAX_PAGE``, and at most what fits in ``PAGE_BYTES`` at
    this page's bytes per job; never less than one."""
    grown = min(MAX_PAGE, size * 2)
    if jobs == 0 or field_bytes == 0:
        return grown
    return max(1, min(grown, PAGE_BYTES * jobs // field_bytes))


def _redacted_json(raw, redactor: Redactor):
    text = to_text(raw)
    if not text:
        return None
    ok, value = parse_json(text)
    return redactor.value(value) if ok else redactor.text(text)


def iter_record_pages(
    client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int, redactor: Redactor
) -> Iterator[list[dict]]:
    """Matching jobs as redacted dicts, oldest first: one list per page read from Redis."""
    cursor = Cursor()
    size = FIRST_PAGE
    while True:
        page = next_page(client, queue=queue, filt=filt, before_ms=before_ms, cursor=cursor, size=size)
        pipe = client.pipeline(transaction=False)
        for job_id in page.match_ids:
            pipe.hmget(queue.job_key(job_id), EXPORT_FIELDS)
        records = []
        field_bytes = 0
        for job_id, values in zip(page.match_ids, pipe.execute() if page.match_ids else []):
            f = dict(zip(EXPORT_FIELDS, values))
            if all(v is None for v in values):
                continue  # removed since the page was read
            field_bytes += sum(len(v) for v in values if v is not None)
            records.append(
                {
                    "id": job_id,
                    "name": to_text(f["name"]),
                    "timestamp": to_int(f["timestamp"]),
                    "processedOn": to_int(f["processedOn"]),
                    "finishedOn": to_int(f["finishedOn"]),
                    "attemptsMade": to_int(f["atm"], 0),
                    "attemptsStarted": to_int(f["ats"], 0),
                    "stalledCounter": to_int(f["stc"], 0),
                    "failedReason": redactor.text(to_text(f["failedReason"])),
                    "data": _redacted_json(f["data"], redactor),
                    "opts": _redacted_json(f["opts"], redactor),
                    "stacktrace": _redacted_json(f["stacktrace"], redactor),
                    "returnvalue": _redacted_json(f["returnvalue"], redactor),
                }
            )
        if records:
            yield records
        if page.exhausted:
            return
        cursor = advance(cursor, page)
        size = next_page_size(size, len(records), field_bytes)


def iter_jobs_jsonl(
    client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int, redactor: Redactor
) -> Iterator[str]:
    """One JSON object per line, one chunk per page. ``<``, ``>`` and ``&`` are not escaped:
    this is a download."""
    for records in iter_record_pages(client, queue=queue, filt=filt, before_ms=before_ms, redactor=redactor):
        yield "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n" for record in records)


def _csv_cell(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # Spreadsheet formula injection: a text cell starting with = + - @ (or tab/CR) would run.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def iter_jobs_csv(
    client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int, redactor: Redactor
) -> Iterator[str]:
    """A header line, then one CSV row per job, one chunk per page (the header in the first,
    so the first chunk has read Redis: a view that takes it before answering can still answer
    an error); JSON fields as compact JSON text."""
    buf = io.StringIO()
    writer = csv.writer(buf)

    def line(row) -> str:
        buf.seek(0)
        buf.truncate()
        writer.writerow(row)
        return buf.getvalue()

    head = line(CSV_COLUMNS)
    for records in iter_record_pages(client, queue=queue, filt=filt, before_ms=before_ms, redactor=redactor):
        yield head + "".join(line([_csv_cell(record[c]) for c in CSV_COLUMNS]) for record in records)
        head = ""
    if head:  # no job matched: the header alone
        yield head
