"""Fragment or full page: the one rule for views that answer htmx requests with a part of a page.

``request.htmx`` comes from django-htmx's ``HtmxMiddleware``. ``HX-Request`` alone does not mean
"swap a part": on a history-cache miss (back/forward to a URL htmx pushed, its snapshot not in
sessionStorage) htmx 2 re-fetches the URL with ``HX-Request`` *and* ``HX-History-Restore-Request``
and swaps the answer into ``<body>``, so it must get the full page.

Every response that depends on these headers says so (``Vary``), or a browser coming back to a
URL from another page may reuse, from its HTTP cache, the fragment htmx fetched for that URL.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

# Both decide the answer: HX-Request alone cannot tell a swap from a history restore.
VARY_HEADERS = ("HX-Request", "HX-History-Restore-Request")


def wants_fragment(request: HttpRequest) -> bool:
    """True when htmx will swap the answer into a part of the page (its target)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def vary_on_htmx(response: HttpResponse) -> HttpResponse:
    patch_vary_headers(response, VARY_HEADERS)
    return response


def render_page_or_fragment(request: HttpRequest, *, page: str, fragment: str, context: dict) -> HttpResponse:
    """Render ``fragment`` (a template partial, ``page#name``) for an htmx swap, ``page`` otherwise."""
    return vary_on_htmx(render(request, fragment if wants_fragment(request) else page, context))
