"""Read-only JSON API, version 1.

Authenticated by ``Authorization: Bearer <token>`` (tokens from ``manage.py api_token``) or a
logged-in session (``dashboard.accounts.auth.api_auth``). Anonymous requests get 401 JSON
rather than a login redirect.
"""

from __future__ import annotations

from django.views.decorators.http import require_GET

from dashboard.accounts.auth import api_auth
from dashboard.browse import selectors as reads
from dashboard.browse.params import int_param, page_size_param, state_param
from dashboard.web.errors import JsonResponse, api_errors


@require_GET
@api_auth
@api_errors
def queues(request):
    items, connections = [], []
    for conn in reads.overview():
        connections.append({"name": conn.name, "ok": not conn.error, "error": conn.error or None})
        items.extend(s.as_dict() for s in conn.snapshots)
    return JsonResponse({"queues": items, "connections": connections})


@require_GET
@api_auth
@api_errors
def queue(request, connection, prefix, name):
    ref = reads.resolve(connection, prefix, name)
    body = reads.queue_snapshot(ref).as_dict()
    body["schedulers_list"] = [s.as_dict() for s in reads.queue_schedulers(ref)]
    return JsonResponse(body)


@require_GET
@api_auth
@api_errors
def jobs(request, connection, prefix, name):
    ref = reads.resolve(connection, prefix, name)
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
    ref = reads.resolve(connection, prefix, name)
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
            "children": {"pending": d.children_pending, "processed": d.children_processed, "failed": d.children_failed},
        }
    )
