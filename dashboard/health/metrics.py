"""Prometheus ``/metrics`` in the text exposition format (version 0.0.4).

Built only from documents already in the dashboard Redis, so a scrape never reads the
monitored Redis, whatever the scrape interval or the number of Prometheus servers:

* queue figures from the monitor's state document (``dashboard.live.read_state``), written
  once per tick by the leading monitor;
* check results from the last stored health report (``queuewatch:health``, written by
  whoever last ran the checks: the health page, ``manage.py check_queues``, or the monitor
  through ``dashboard.health.run_and_store``), with its age, so a stale result is visible;
* open alerts (``ALERTS{alertname, alertstate}``, as Prometheus exposes its own) from the
  database the monitor writes them to.

Counters (``*_total``) count events since the leading monitor started leading; Prometheus'
``rate()``/``increase()`` handle the reset when leadership moves.

Protection (see README, "Health checks and metrics"): ``QUEUEWATCH_METRICS_TOKEN`` (bearer
token, compared in constant time) and/or ``QUEUEWATCH_METRICS_ALLOW`` (client networks). With
neither, a logged-in user or an API token is required. The view opts out of the login
middleware and answers 401/403 itself, so Prometheus is never redirected to a login page.

The app does not need ``prometheus_client``; the tests parse this output with it.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import time

import redis
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from dashboard.health import checks as health_glue
from dashboard.live import channels as live
from dashboard.alerts.models import Alert
from dashboard.accounts.models import ApiToken
from queues.snapshot import COUNT_STATES

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
COUNTED_EVENTS = ("completed", "failed", "stalled", "added", "duplicated")
WINDOWS = ("1", "5", "15")


def escape_label(value) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class Exposition:
    """Metric families in declaration order, each with its HELP, TYPE and samples."""

    def __init__(self):
        self._families: dict[str, tuple[str, str, list[str]]] = {}

    def family(self, name: str, kind: str, help_text: str) -> None:
        self._families.setdefault(name, (kind, help_text, []))

    def sample(self, name: str, labels: dict | None, value, *, family: str | None = None) -> None:
        fam = family or name
        if labels:
            body = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
            line = f"{name}{{{body}}} {format_value(value)}"
        else:
            line = f"{name} {format_value(value)}"
        self._families[fam][2].append(line)

    def render(self) -> str:
        out = []
        for name, (kind, help_text, samples) in self._families.items():
            out.append(f"# HELP {name} {escape_help(help_text)}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)
        return "\n".join(out) + "\n"


def _queue_labels(q: dict) -> dict:
    return {"connection": q.get("connection", ""), "prefix": q.get("prefix", ""), "queue": q.get("name", "")}


def freshness(x, name: str, doc: dict | None, time_field: str, now_ms: int, *, present: str, timestamp: str, age: str) -> None:
    """``<name>_present``, and when the document exists its ``_timestamp_seconds`` and
    ``_age_seconds``: how a scraper tells "no data" and "stale data" from "all zero"."""
    x.family(f"{name}_present", "gauge", present)
    x.sample(f"{name}_present", None, 1 if doc else 0)
    if doc:
        at = int(doc.get(time_field) or 0)
        x.family(f"{name}_timestamp_seconds", "gauge", timestamp)
        x.sample(f"{name}_timestamp_seconds", None, at / 1000)
        x.family(f"{name}_age_seconds", "gauge", age)
        x.sample(f"{name}_age_seconds", None, max(0, now_ms - at) / 1000)


def render_metrics(state: dict | None, health_doc: dict | None, now_ms: int, alerts: list[dict] | None = None) -> str:
    """The exposition text for a state document, a stored health report (either may be None)
    and the open alerts. Pure: everything it shows comes from its arguments."""
    x = Exposition()
    if alerts is not None:
        # Prometheus' own shape: one ALERTS sample per pending or firing alert.
        x.family("ALERTS", "gauge", "Open Queuewatch alerts, as Prometheus shows its own (alertstate pending or firing).")
        for a in alerts:
            x.sample("ALERTS", {"alertname": a["rule__name"], "alertstate": a["state"], "severity": a["rule__severity"],
                                "connection": a["connection"], "prefix": a["prefix"], "queue": a["queue"], "item": a["item"],
                                "silenced": "true" if a["silenced_by"] else "false"}, 1)

    freshness(x, "queuewatch_monitor_state", state, "taken_at", now_ms,
              present="1 if a leading monitor's state document is available.",
              timestamp="When the monitor took the state document (Unix time).",
              age="Age of the monitor's state document at scrape time.")
    if state:
        x.family("queuewatch_connection_up", "gauge", "1 if the monitor reaches the monitored Redis connection.")
        for name, conn in sorted((state.get("connections") or {}).items()):
            x.sample("queuewatch_connection_up", {"connection": name}, 1 if conn.get("ok") else 0)

        queues = state.get("queues") or []
        gauges = (
            ("queuewatch_queue_jobs", "Jobs in each state, as BullMQ's getJobCounts() (waiting excludes a legacy paused list)."),
            ("queuewatch_queue_legacy_paused_jobs", "Jobs in a legacy BullMQ 5 paused list (not run until resumed)."),
            ("queuewatch_queue_attempt_failures_per_minute",
             "Failed attempts that will be retried (not final failures) per minute, averaged over the window."),
            ("queuewatch_queue_paused", "1 if the queue is paused."),
            ("queuewatch_queue_oldest_waiting_age_seconds", "Age of the oldest waiting job; 0 when none is waiting."),
            ("queuewatch_queue_stalled_now", "Jobs in active whose lock is gone: the next stall check re-runs them."),
            ("queuewatch_queue_stall_failed_15m", "Jobs failed in the last 15 minutes for stalling more than allowed."),
            ("queuewatch_queue_dead_letter_growth_per_minute",
             "Jobs entering the dead-letter set per minute (for an application DLQ queue: jobs added), "
             "averaged over the window."),
        )
        for name, help_text in gauges:
            x.family(name, "gauge", help_text)
        for event in COUNTED_EVENTS:
            x.family(f"queuewatch_queue_{event}", "counter",
                     f"'{event}' events of the queue counted since the leading monitor started leading.")
        x.family("queuewatch_queue_attempt_failures", "counter",
                 "Failed attempts that will be retried, counted since the leading monitor started leading.")
        x.family("queuewatch_queue_stream_gaps", "counter",
                 "Times the events stream was trimmed past the monitor's position since it started leading.")
        for q in queues:
            labels = _queue_labels(q)
            counts = q.get("counts") or {}
            for st in COUNT_STATES:
                x.sample("queuewatch_queue_jobs", {**labels, "state": st}, int(counts.get(st) or 0))
            x.sample("queuewatch_queue_paused", labels, bool(q.get("paused")))
            age = q.get("oldest_waiting_age_ms")
            x.sample("queuewatch_queue_oldest_waiting_age_seconds", labels, (age or 0) / 1000)
            x.sample("queuewatch_queue_stalled_now", labels, int(q.get("stalled_now") or 0))
            x.sample("queuewatch_queue_stall_failed_15m", labels, int(q.get("stall_failed_15m") or 0))
            x.sample("queuewatch_queue_legacy_paused_jobs", labels, int(q.get("legacy_paused_jobs") or 0))
            retried = (q.get("rates_per_min") or {}).get("attempt_failed") or {}
            for w in WINDOWS:
                x.sample("queuewatch_queue_attempt_failures_per_minute", {**labels, "window": f"{w}m"},
                         float(retried.get(w) or 0.0))
            dead = (q.get("rates_per_min") or {}).get("dead_letter") or {}
            for w in WINDOWS:
                x.sample("queuewatch_queue_dead_letter_growth_per_minute", {**labels, "window": f"{w}m"},
                         float(dead.get(w) or 0.0))
            totals = q.get("events_total") or {}
            for event in COUNTED_EVENTS:
                x.sample(f"queuewatch_queue_{event}_total", labels, int(totals.get(event) or 0),
                         family=f"queuewatch_queue_{event}")
            x.sample("queuewatch_queue_attempt_failures_total", labels, int(totals.get("attempt_failed") or 0),
                     family="queuewatch_queue_attempt_failures")
            x.sample("queuewatch_queue_stream_gaps_total", labels, int(q.get("stream_gaps") or 0),
                     family="queuewatch_queue_stream_gaps")

    freshness(x, "queuewatch_health", health_doc, "checked_at", now_ms,
              present="1 if a stored health-check report is available.",
              timestamp="When the stored health checks ran (Unix time).",
              age="Age of the stored health-check report at scrape time.")
    if health_doc:
        x.family("queuewatch_check_failing", "gauge",
                 "1 if the check fails, 0 if it passes or is unknown (label kind: the check's stable id).")
        x.family("queuewatch_check_unknown", "gauge", "1 if the check could not be decided (e.g. no monitor state).")
        for conn in health_doc.get("connections") or []:
            for r in conn.get("results") or []:
                labels = {"connection": r.get("connection") or conn.get("name", ""), "prefix": r.get("prefix") or "",
                          "queue": r.get("queue") or "", "kind": r.get("kind", "")}
                x.sample("queuewatch_check_failing", {**labels, "severity": r.get("severity", "")},
                         1 if r.get("status") == "fail" else 0)
                x.sample("queuewatch_check_unknown", labels, 1 if r.get("status") == "unknown" else 0)
    return x.render()


# ------------------------------------------------------------------------------------------
# Protection


def _text(body: str, status: int) -> HttpResponse:
    return HttpResponse(body + "\n", status=status, content_type="text/plain; charset=utf-8")


def _unauthorized(message: str) -> HttpResponse:
    response = _text(f"unauthorized: {message}", 401)
    response["WWW-Authenticate"] = 'Bearer realm="queuewatch-metrics"'
    return response


def _bearer(request) -> str | None:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    return header[len("Bearer "):].strip()


def client_allowed(remote_addr: str, networks: list) -> bool:
    try:
        ip = ipaddress.ip_address((remote_addr or "").strip())
    except ValueError:
        return False
    candidates = [ip]
    if ip.version == 6 and ip.ipv4_mapped is not None:
        candidates.append(ip.ipv4_mapped)
    return any(c in net for c in candidates for net in networks if c.version == net.version)


def check_access(request) -> HttpResponse | None:
    """None when the request may read /metrics, else the 401/403 response to send."""
    token = settings.QUEUEWATCH_METRICS_TOKEN
    allow = settings.QUEUEWATCH_METRICS_ALLOW
    if allow and not client_allowed(request.META.get("REMOTE_ADDR", ""), allow):
        return _text("forbidden: this address is not in QUEUEWATCH_METRICS_ALLOW", 403)
    given = _bearer(request)
    if token:
        if not given:
            return _unauthorized("a bearer token is required")
        if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
            return _unauthorized("invalid token")
        return None
    if allow:
        return None
    # Neither configured: the same credentials as the JSON API.
    if given is not None:
        user = ApiToken.user_for(given) if given else None
        return None if user is not None else _unauthorized("invalid or revoked token")
    if request.user.is_authenticated:
        return None
    return _unauthorized("authentication required (set QUEUEWATCH_METRICS_TOKEN for Prometheus)")


@login_not_required
@require_GET
def metrics(request):
    denied = check_access(request)
    if denied is not None:
        return denied
    try:
        client = live.dashboard_redis()
        state = live.read_state(client)
        health_doc = health_glue.read_stored(client)
    except redis.RedisError as exc:
        return _text(f"dashboard Redis unavailable: {exc.__class__.__name__}", 503)
    alerts = list(Alert.objects.filter(state__in=Alert.OPEN).order_by("rule__name", "fingerprint").values(
        "rule__name", "rule__severity", "state", "connection", "prefix", "queue", "item", "silenced_by"))
    response = HttpResponse(render_metrics(state, health_doc, int(time.time() * 1000), alerts), content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response
