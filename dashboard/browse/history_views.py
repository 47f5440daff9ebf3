"""The queue page's chart data: stored history as JSON for ``static/charts.js``."""

from __future__ import annotations

from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.browse import selectors as reads
from dashboard.live.history import queue_history as history_for
from dashboard.web.errors import JsonResponse, page_errors


@require_GET
@page_errors
def queue_history(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    try:
        data = history_for(queue, request.GET.get("range", "1h"), now=timezone.now())
    except ValueError as exc:
        return JsonResponse({"error": "bad_request", "message": str(exc)}, status=400)
    response = JsonResponse(data)
    response["Cache-Control"] = "no-store"  # live figures; charts re-fetch them
    return response
