"""Turning reader errors into responses: one decorator for pages, one for the API."""

from __future__ import annotations

import functools

import json

from django.http import HttpResponse
from django.shortcuts import render

from queues.errors import JobNotFound, QueueNotFound, RedisUnavailable


_HTML_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


class JsonResponse(HttpResponse):
    """JSON with ``<``, ``>`` and ``&`` written as unicode escapes. Parsers read the same
    values, but job data can never be interpreted as markup, even by a browser that ignores
    the content type (defence in depth on top of ``nosniff``)."""

    def __init__(self, data, status: int = 200):
        body = json.dumps(data, ensure_ascii=False).translate(_HTML_ESCAPES)
        super().__init__(body, status=status, content_type="application/json; charset=utf-8")


def _not_found_message(exc: Exception) -> str:
    if isinstance(exc, QueueNotFound) and not exc.prefix and not exc.name:
        return f"No Redis connection named '{exc.connection}' is configured."
    return str(exc)


def page_errors(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except (QueueNotFound, JobNotFound) as exc:
            return render(request, "error.html", {"title": "Not found", "message": _not_found_message(exc)}, status=404)
        except RedisUnavailable as exc:
            return render(request, "error.html", {"title": "Redis unavailable", "message": str(exc)}, status=503)

    return wrapper


def api_errors(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except (QueueNotFound, JobNotFound) as exc:
            return JsonResponse({"error": "not_found", "message": _not_found_message(exc)}, status=404)
        except RedisUnavailable as exc:
            return JsonResponse({"error": "redis_unavailable", "message": str(exc)}, status=503)
        except ValueError as exc:
            return JsonResponse({"error": "bad_request", "message": str(exc)}, status=400)

    return wrapper
