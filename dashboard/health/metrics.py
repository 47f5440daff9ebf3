"""``/metrics`` for Prometheus: who may scrape it, and the view that answers.

What it shows is ``dashboard/health/collector.py`` (a ``prometheus_client`` custom collector
over documents already in the dashboard Redis: a scrape never reads the monitored Redis).

Protection (see ``docs/metrics.md``): ``QUEUEWATCH_METRICS_TOKEN`` (bearer token, compared in
constant time) and/or ``QUEUEWATCH_METRICS_ALLOW`` (client networks). With neither, a logged-in
user or an API token is required. The view opts out of the login middleware and answers
401/403 itself, so Prometheus is never redirected to a login page.
"""

from __future__ import annotations

import hmac
import time

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from dashboard.accounts import scopes
from dashboard.accounts.auth import authenticate, bearer_token, token_may_scrape
from dashboard.alerts.models import Alert
from dashboard.core import dash_redis, state_store
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.health import checks as health_checks
from dashboard.health.collector import CONTENT_TYPE, documents_needed, render_metrics
from dashboard.health.exposition import Wanted
from dashboard.web.client_address import comes_from

# ------------------------------------------------------------------------------------------
# Protection


def _text(body: str, status: int) -> HttpResponse:
    return HttpResponse(body + "\n", status=status, content_type="text/plain; charset=utf-8")


def _unauthorized(message: str) -> HttpResponse:
    response = _text(f"unauthorized: {message}", 401)
    response["WWW-Authenticate"] = 'Bearer realm="queuewatch-metrics"'
    return response


def check_access(request) -> HttpResponse | None:
    """None when the request may read /metrics, else the 401/403 response to send."""
    token = settings.QUEUEWATCH_METRICS_TOKEN
    allow = settings.QUEUEWATCH_METRICS_ALLOW
    # The client's address as the login lockout takes it: behind QUEUEWATCH_TRUSTED_PROXIES, the
    # proxy's address would let every client through (or none).
    if allow and not comes_from(request, allow):
        return _text("forbidden: this address is not in QUEUEWATCH_METRICS_ALLOW", 403)
    given = bearer_token(request)
    if token:
        if not given:
            return _unauthorized("a bearer token is required")
        if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
            return _unauthorized("invalid token")
        return None
    if allow:
        return None
    # Neither configured: the same credentials as the JSON API.
    why = authenticate(request)
    if why is None:
        if not token_may_scrape(request.user):
            return _text("forbidden: this token has no metrics scope", 403)
        # Every queue's figures: a user who sees only some queues (grants, no global role) may not.
        return None if scopes.sees_everything(request.user) else _text("forbidden: this needs a global role", 403)
    return _unauthorized(
        why if given is not None else "authentication required (set QUEUEWATCH_METRICS_TOKEN for Prometheus)"
    )


@login_not_required
@require_GET
def metrics(request):
    denied = check_access(request)
    if denied is not None:
        return denied
    try:
        wanted = Wanted.of(request.GET.getlist("name[]"))
    except ValueError as exc:
        return _text(f"bad request: {exc}", 400)
    needs_state, needs_health, needs_alerts = documents_needed(wanted)
    try:
        client = dash_redis.dashboard_redis()
        state = state_store.read_state(client) if needs_state else None
        health_doc = health_checks.read_stored(client) if needs_health else None
    except DashboardRedisError as exc:
        return _text(f"dashboard Redis unavailable: {exc.__class__.__name__}", 503)
    alerts = (
        list(
            Alert.objects.filter(state__in=Alert.OPEN)
            .order_by("rule__name", "fingerprint")
            .values("rule__name", "rule__severity", "state", "connection", "prefix", "queue", "item", "silenced_by")
        )
        if needs_alerts
        else None
    )
    body = render_metrics(state=state, health=health_doc, alerts=alerts, now_ms=int(time.time() * 1000), wanted=wanted)
    response = HttpResponse(body, content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response
