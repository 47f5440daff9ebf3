"""Headers every answer carries: the Content-Security-Policy (Django 5.2 has none built in) and
``Cache-Control: no-store, private`` on everything but static files.

Every page's JavaScript and CSS come from ``static/`` (no inline ``<script>``, ``style=``,
``on…=`` handler or ``javascript:`` link; htmx's own inline indicator styles and eval are
off in base.html), so the policy needs no ``'unsafe-inline'``: markup injected through job
data could neither run script nor restyle the page."""

from __future__ import annotations

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Sets the policy on every answer that has none (sync and async, via the mixin)."""

    def process_response(self, request, response):
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


class NoStoreMiddleware(MiddlewareMixin):
    """Pages, fragments, downloads and API answers hold job data and account details: no
    browser or proxy cache may keep them (a shared computer's back button, a caching proxy).
    Static files are answered by WhiteNoise before this runs, and keep their long caching. An
    answer that chose its own caching keeps it."""

    def process_response(self, request, response):
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store, private"
        return response
