"""The Content-Security-Policy header (Django 5.2 has none built in).

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
