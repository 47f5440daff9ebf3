"""Errors a request can end in, and turning them into responses: one decorator for pages,
one for the API. Only these types become 4xx/5xx answers; anything else is a bug and
surfaces as one (a stray ``ValueError`` is not a user's fault)."""

from __future__ import annotations

import functools
import json

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from dashboard.core.i18n import translate
from queues.errors import (
    JobNotFound,
    NotOffered,
    QueueNotFound,
    QueuewatchError,
    SourceUnavailable,
    UnreadableQueueData,
)
from queues.script_versions import UnsupportedRelease


class InvalidInput(QueuewatchError):
    """Input a request cannot run with (400); the message is shown to the user as is.
    ``details`` are extra fields for the JSON answer (e.g. ``errors``: a job schema's reasons)."""

    def __init__(self, message: str = "", **details):
        self.details = details
        super().__init__(message)


class Conflict(QueuewatchError):
    """The request is fine but the current state refuses it (409), e.g. a task already running.
    ``details`` are extra fields for the JSON answer."""

    def __init__(self, message: str, **details):
        self.details = details
        super().__init__(message)


class TooManyRequests(QueuewatchError):
    """Too many of something running at once for this user (429); the message says what to do."""


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
        return _("No Redis connection named '%(name)s' is configured.") % {"name": exc.connection}
    return str(exc)


def page_errors(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except (QueueNotFound, JobNotFound) as exc:
            return render(
                request,
                "error.html",
                {"status": 404, "title": _("Not found"), "message": _not_found_message(exc)},
                status=404,
            )
        except UnreadableQueueData as exc:
            return render(
                request,
                "error.html",
                {"status": 422, "title": _("Unreadable queue data"), "message": str(exc)},
                status=422,
            )
        except SourceUnavailable as exc:
            return render(
                request,
                "error.html",
                {"status": 503, "title": _("Connection unavailable"), "message": str(exc)},
                status=503,
            )
        except TooManyRequests as exc:
            return render(
                request, "error.html", {"status": 429, "title": _("Too many requests"), "message": str(exc)}, status=429
            )
        except UnsupportedRelease as exc:
            return render(
                request,
                "error.html",
                {"status": 409, "title": _("Refused"), "message": translate(exc.message)},
                status=409,
            )
        except NotOffered as exc:
            return render(
                request,
                "error.html",
                {"status": 501, "title": _("Not offered"), "message": translate(exc.message)},
                status=501,
            )

    return wrapper


def api_errors(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except (QueueNotFound, JobNotFound) as exc:
            return JsonResponse({"error": "not_found", "message": _not_found_message(exc)}, status=404)
        except UnreadableQueueData as exc:
            return JsonResponse({"error": "unreadable_data", "message": str(exc)}, status=422)
        except SourceUnavailable as exc:
            return JsonResponse({"error": "redis_unavailable", "message": str(exc)}, status=503)
        except InvalidInput as exc:
            if request.method != "GET":  # a refused action, not a bad filter on a read
                from dashboard.audit import log as audit  # lazily: the audit module loads models

                audit.record_refusal(
                    user=request.user,
                    kind="validation",
                    via="api",
                    target=f"{request.method} {request.path}",
                    message=str(exc),
                )
            return JsonResponse({"error": "bad_request", "message": str(exc), **exc.details}, status=400)
        except Conflict as exc:
            return JsonResponse({"error": "conflict", "message": str(exc), **exc.details}, status=409)
        except UnsupportedRelease as exc:
            return JsonResponse(
                {"error": "unsupported_bullmq", "message": translate(exc.message), "recorded": exc.recorded}, status=409
            )
        except PermissionDenied as exc:
            return JsonResponse({"error": "forbidden", "message": str(exc)}, status=403)
        except TooManyRequests as exc:
            return JsonResponse({"error": "too_many_requests", "message": str(exc)}, status=429)
        except NotOffered as exc:
            return JsonResponse({"error": "not_offered", "message": str(exc)}, status=501)

    return wrapper
