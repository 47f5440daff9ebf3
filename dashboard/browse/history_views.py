"""The queue page's chart data: stored history as JSON for ``static/charts.js``."""

from __future__ import annotations

from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.browse import selectors as reads
from dashboard.browse.figures import bullmq_series
from dashboard.live.history import queue_history as history_for
from dashboard.web.errors import JsonResponse, page_errors


@require_GET
@page_errors
def queue_history(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    now = timezone.now()
    try:
        data = history_for(queue, request.GET.get("range", "1h"), now=now)
    except ValueError as exc:
        return JsonResponse({"error": "bad_request", "message": str(exc)}, status=400)
    # BullMQ's own per-minute counts beside ours: they reach back before Queuewatch started
    # and through times no monitor led (read from the source, kept briefly: browse.figures).
    data.update(bullmq_series(queue, t=data["t"], step_s=data["resolution"], now_ms=int(now.timestamp() * 1000)))
    response = JsonResponse(data)
    response["Cache-Control"] = "no-store"  # live figures; charts re-fetch them
    return response
