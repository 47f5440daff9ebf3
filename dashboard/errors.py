"""Turning reader errors into responses: one decorator for pages, one for the API."""

from __future__ import annotations

import functools

from django.http import JsonResponse
from django.shortcuts import render

from queues.errors import JobNotFound, QueueNotFound, RedisUnavailable


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
