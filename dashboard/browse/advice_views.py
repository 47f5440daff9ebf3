"""Retry-policy advice on the queue page: an htmx section, a plain page
without JavaScript. The rules are in ``queues.retry_advice``; the read (a bounded sample, at
most once a minute per queue) is ``selectors.retry_advice``."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.browse import selectors as reads
from dashboard.core.i18n import translate
from dashboard.health.views import code_spans
from dashboard.web.errors import page_errors
from queues import retry_advice


@require_GET
@page_errors
def queue_advice(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    items = [
        {
            "a": a,
            "title": translate(a.title),
            "summary": code_spans(a.summary),
            "explanation": code_spans(a.explanation),
            "fix": code_spans(a.fix),
        }
        for a in reads.retry_advice(queue)
    ]
    return render(
        request,
        "browse/partials/retry_advice.html",
        {
            "queue": queue,
            "items": items,
            "sample_size": retry_advice.SAMPLE_PER_STATE,
            "failing": [i for i in items if i["a"].failed],
        },
    )
