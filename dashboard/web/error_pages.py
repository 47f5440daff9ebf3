"""The pages a request ends on when it goes wrong outside a view's own handling: Django's
400/403/404/500 handlers (wired in dashboard/urls.py) and the CSRF failure view. Each is the
ordinary shell with a sentence saying what happened and a way back, in the user's language.
Errors a view raises on purpose (a queue or job not found, Redis down) are dashboard/web/errors.py."""

from __future__ import annotations

import logging

from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

log = logging.getLogger(__name__)


def _page(request, status: int, title: str, message: str) -> HttpResponse:
    return render(request, "error.html", {"status": status, "title": title, "message": message}, status=status)


def bad_request(request, exception=None):
    return _page(
        request,
        400,
        _("Bad request"),
        _(
            "Queuewatch could not understand this request. Go back and try again; "
            "if it keeps happening, the link may be broken."
        ),
    )


def forbidden(request, exception=None):
    # Our own refusals say which role is missing (PermissionDenied("…") in dashboard/accounts/auth.py).
    detail = str(exception) if exception is not None and str(exception) else ""
    return _page(
        request,
        403,
        _("Not allowed"),
        detail or _("Your role does not allow this page or action. Ask an administrator if you need it."),
    )


def not_found(request, exception=None):
    # Never the exception's text: Django's resolver puts the URL patterns in it.
    return _page(
        request,
        404,
        _("Page not found"),
        _("There is no page at this address. The link may be mistyped, or what it showed may have been removed."),
    )


def server_error(request):
    message = _("Something went wrong on our side and it has been logged. Try again in a moment.")
    try:
        return _page(request, 500, _("Something went wrong"), message)
    except Exception:  # the shell itself failed (its context needs the database): plain text, still an answer
        log.exception("the 500 page could not be rendered")
        return HttpResponse(message, status=500, content_type="text/plain; charset=utf-8")


def csrf_failure(request, reason: str = "") -> HttpResponse:
    """A form sent without a valid CSRF token: what to do about it (the reason goes to the audit
    log, not on the page)."""
    return _page(
        request,
        403,
        _("This form has expired"),
        _(
            "The form was sent without a valid security token, usually because the page was open for a "
            "long time or you logged in again in another tab. Reload the page and send the form again."
        ),
    )
