"""A queue's deduplication keys (``queues.dedup``): the page (``…/deduplication``), its JSON
twin (``/api/v1/queues/…/deduplication``) and the hit rate from the leading monitor's counts.

The listing is one bounded step of a SCAN (``queues.redis.dedup``); ``cursor`` goes on where
the last page stopped. Releasing a key is the ``release-dedup-key`` queue action (its role, CSRF
and audit), posted from the page's forms.
"""

from __future__ import annotations

import re

from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.accounts.auth import api_auth
from dashboard.browse import selectors as reads
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core.i18n import translate
from dashboard.web.errors import InvalidInput, JsonResponse, api_errors, page_errors
from queues.dedup import DedupPage, DedupRates
from queues.errors import NotOffered
from queues.keys import QueueRef
from queues.sources.facets import dedup_of


def cursor_from(request) -> str:
    cursor = request.GET.get("cursor", "0").strip() or "0"
    if not re.fullmatch(r"[0-9a-f]{1,1024}", cursor):
        raise InvalidInput("'cursor' must be the cursor a previous page gave.")
    return cursor


def read_page(queue: QueueRef, cursor: str) -> DedupPage:
    source = get_registry().source(queue.connection)
    return dedup_of(source).page(queue, cursor=cursor, redactor=get_redactor())


def rates_for(entry: dict | None) -> DedupRates | None:
    """Adds and deduplication hits the leading monitor counted since it started leading, from the
    queue's entry of its state document; None when no monitor publishes its figures, or it has
    not counted this queue yet."""
    if entry is None:
        return None
    totals = entry.get("events_total") or {}
    return DedupRates(added=int(totals.get("added") or 0), deduplicated=int(totals.get("deduplicated") or 0))


@require_GET
@page_errors
def queue_dedup(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    cursor = cursor_from(request)
    publishes, entry = reads.published_entry(queue)
    context: dict = {
        "queue": queue,
        "cursor": cursor,
        "rates": rates_for(entry),
        "monitor_publishes": publishes,
        "page": None,
    }
    try:
        context["page"] = read_page(queue, cursor)
    except NotOffered as exc:
        context["not_offered"] = translate(exc.message)
    return render(request, "browse/dedup.html", context)


@require_GET
@api_auth
@api_errors
def api_queue_dedup(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    page = read_page(queue, cursor_from(request))
    rates = rates_for(reads.published_entry(queue)[1])
    return JsonResponse(
        {
            "keys": [
                {
                    "id": k.dedup_id,
                    "owner": k.owner,
                    "owner_exists": k.owner_exists,
                    "ttl_ms": k.ttl_ms,
                    "stuck": k.stuck,
                    "pending_next": None
                    if k.pending is None
                    else {
                        "name": k.pending.name,
                        "job_id": k.pending.job_id or None,
                        "data_preview": k.pending.data_preview,
                        "data_bytes": k.pending.data_bytes,
                    },
                }
                for k in page.keys
            ],
            "cursor": page.cursor,
            "more": page.more,
            "rates": None
            if rates is None
            else {"added": rates.added, "deduplicated": rates.deduplicated, "hit_rate": rates.hit_rate},
        }
    )
