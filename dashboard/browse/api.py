"""Read-only JSON API, version 1.

Authenticated by ``Authorization: Bearer <token>`` (tokens from ``manage.py api_token``) or a
logged-in session (``dashboard.accounts.auth.api_auth``). Anonymous requests get 401 JSON
rather than a login redirect.
"""

from __future__ import annotations

from django.views.decorators.http import require_GET

from dashboard.accounts.auth import api_auth
from dashboard.browse import selectors as reads
from dashboard.browse.figures import queue_figures
from dashboard.browse.params import int_param, page_size_param, sort_param, state_param
from dashboard.web.errors import JsonResponse, api_errors

API_PAGE_SIZE, API_MAX_PAGE_SIZE = 100, 1000  # queues per page of GET /api/v1/queues


@require_GET
@api_auth
@api_errors
def queues(request):
    """One page of every connection's queues, in the overview's order (``sort``, ``dir``) and
    filter (``q``: a name substring): each request reads only its page's queues."""
    page = int_param(request, "page", 1)
    size = int_param(request, "size", API_PAGE_SIZE, maximum=API_MAX_PAGE_SIZE)
    start = (page - 1) * size

    def pick(ordered):
        parts, offset = [], 0
        for rows in ordered:
            parts.append(rows[max(0, start - offset) : max(0, start + size - offset)])
            offset += len(rows)
        return parts

    connections, totals = reads.ordered_overview(
        request.user,
        sort=sort_param(request),
        descending=request.GET.get("dir") == "desc",
        query=request.GET.get("q", "").strip()[:200],
        pick=pick,
    )
    items = [s.as_dict() for conn in connections for s in conn.snapshots]
    total = sum(totals)
    return JsonResponse(
        {
            "queues": items,
            "connections": [{"name": c.name, "ok": not c.error, "error": c.error or None} for c in connections],
            "page": page,
            "size": size,
            "total": total,
            "has_next": start + size < total,
        }
    )


@require_GET
@api_auth
@api_errors
def queue(request, connection, prefix, name):
    ref = reads.resolve(request.user, connection, prefix, name)
    body = reads.queue_snapshot(ref).as_dict()
    page = int_param(request, "schedulers_page", 1)
    items, total = reads.queue_schedulers(ref, page)
    body["schedulers_list"] = [s.as_dict() for s in items]
    body["schedulers_page"] = {"page": page, "per_page": reads.SCHEDULERS_PER_PAGE, "total": total}
    if request.GET.get("figures") == "1":  # asked for: up to 47 more reads (docs/operations.md)
        figures, not_offered = queue_figures(ref)
        body["figures"] = figures.as_dict() if figures else {"not_offered": not_offered}
    return JsonResponse(body)


@require_GET
@api_auth
@api_errors
def jobs(request, connection, prefix, name):
    ref = reads.resolve(request.user, connection, prefix, name)
    page = reads.job_page(
        ref,
        state_param(request),
        page=int_param(request, "page", 1),
        page_size=page_size_param(request),
        name_filter=request.GET.get("name", "").strip()[:200],
    )
    return JsonResponse(
        {
            "state": page.state,
            "page": page.page,
            "size": page.page_size,
            "total": page.total,
            "has_next": page.has_next,
            "name_filter": page.name_filter or None,
            "scan_complete": page.scan_complete,
            "jobs": [j.as_dict() for j in page.jobs],
        }
    )


@require_GET
@api_auth
@api_errors
def job(request, connection, prefix, name, job_id):
    ref = reads.resolve(request.user, connection, prefix, name)
    d = reads.job_detail(ref, job_id)

    def payload(p):
        return {"text": p.text, "size": p.size, "truncated": p.truncated, "is_json": p.is_json} if p.present else None

    return JsonResponse(
        {
            **d.summary.as_dict(),
            "state": d.state,
            "data": payload(d.data),
            "opts": payload(d.opts),
            "returnvalue": payload(d.returnvalue),
            "progress": payload(d.progress),
            "failedReason": d.failed_reason,
            "stacktrace": d.stacktrace,
            "logs": d.logs,
            "logs_total": d.logs_total,
            "parentKey": d.parent or None,
            "children": {
                "pending": d.children_pending,
                "processed": d.children_processed,
                "ignored": d.children_ignored,
                "failed": d.children_failed,
            },
            "children_outcomes": d.child_outcomes,
            "flowAttachmentFailed": d.flow_attachment_failed,
            "parentFlags": list(d.parent_flags) if d.parent_flags is not None else None,
            "telemetryMetadata": d.telemetry_metadata or None,
            "deduplication": (
                {"id": d.summary.dedup_id, "owner": d.dedup_owner, "ttl_ms": d.dedup_ttl_ms}
                if d.summary.dedup_id and d.dedup_read
                else None
            ),
        }
    )
