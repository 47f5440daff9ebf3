"""Export of a queue's jobs as JSON lines or CSV: one response builder for the page
(``views.queue_export``) and the API (``api.export``), which differ only in how they answer
errors."""

from __future__ import annotations

import datetime as dt
import itertools

from dashboard.actions.inputs import Selection
from dashboard.actions.services import now_ms
from dashboard.browse import selectors as reads
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.web import downloads, streaming
from dashboard.web.errors import InvalidInput

EXPORT_FORMATS = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}


def export_response(request, connection: str, prefix: str, name: str) -> streaming.Download:
    """Jobs matching the query's filter (failed by default), streamed one Redis page at a time
    (memory stays flat however many jobs, under ASGI too) and redacted. At most
    ``QUEUEWATCH_EXPORTS_PER_USER`` at once per user (``TooManyRequests``)."""
    queue = reads.resolve(request.user, connection, prefix, name)
    fmt = request.GET.get("format", "jsonl")
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput("Export format must be 'jsonl' or 'csv'.")
    chosen = Selection.from_params(request.GET)
    chunks = (
        get_registry()
        .jobs(connection)
        .export(queue, fmt=fmt, filt=chosen.job_filter(), before_ms=now_ms(), redactor=get_redactor())
    )
    # The first page is read before answering: a queue whose data cannot be read (or a
    # connection that fails at once) gets an error page, not a 200 that ends early.
    chunks = iter(chunks)
    first = next(chunks, "")
    response = streaming.download(request, itertools.chain([first], chunks), content_type=EXPORT_FORMATS[fmt])
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = downloads.attachment(f"{queue.name[:80]}-{chosen.state}-{stamp}.{fmt}")
    return response
