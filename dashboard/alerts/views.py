"""Alerting pages: rules, alert history, silences and maintenance windows. Everyone logged in
reads them; only admins change them (``role_required("admin")``, CSRF on every POST)."""

from __future__ import annotations

import datetime as dt

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.accounts.auth import ADMIN, role_required
from dashboard.alerts.forms import MaintenanceWindowForm, RuleForm, SilenceForm
from dashboard.alerts.models import Alert, AlertRule, MaintenanceWindow, Silence
from dashboard.alerts.preview import rule_preview
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from queues import alert_kinds
from queues.cron import CronError, cron_next, zone

PREVIEW_FIRES = 5


@require_GET
def rules(request):
    firing = {r["rule"]: r["n"] for r in _count_firing()}
    items = [(r, firing.get(r.pk, 0)) for r in AlertRule.objects.prefetch_related("channels")]
    return render(request, "alerts/rules.html", {"items": items, "kinds": alert_kinds.KINDS.values()})


def _count_firing():
    from django.db.models import Count

    return Alert.objects.filter(state=Alert.FIRING).values("rule").annotate(n=Count("id"))


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
def rule_edit(request, rule_id: int | None = None):
    """Create or edit a rule. The "Preview" button replays the form's rule over the last
    24 hours of stored history without saving it."""
    rule = get_object_or_404(AlertRule, pk=rule_id) if rule_id else None
    form = RuleForm(request.POST or None, instance=rule)
    preview = None
    if request.method == "POST" and form.is_valid():
        if "preview" in request.POST:
            preview = rule_preview(rule=form.save(commit=False), now=timezone.now())
        else:
            saved = form.save()
            audit.record_change(request, action="rule.update" if rule else "rule.create", obj=saved)
            return redirect("alert_rules")
    elif request.method == "POST" and "preview" not in request.POST:
        audit.record_change(
            request,
            action="rule.update" if rule else "rule.create",
            obj=rule,
            outcome=AuditEntry.REFUSED,
            message=audit.form_errors(form),
        )
    return render(
        request,
        "alerts/rule_form.html",
        {"form": form, "rule": rule, "preview": preview, "kinds": alert_kinds.KINDS.values()},
    )


@require_GET
def rule_detail(request, rule_id: int):
    rule = get_object_or_404(AlertRule, pk=rule_id)
    wanted = request.GET.get("preview") == "1"  # a replay is not free: on request only
    return render(
        request,
        "alerts/rule_detail.html",
        {
            "rule": rule,
            "preview": rule_preview(rule=rule, now=timezone.now()) if wanted else None,
            "open": Alert.objects.filter(rule=rule, state__in=Alert.OPEN),
        },
    )


@role_required(ADMIN)
@require_POST
def rule_delete(request, rule_id: int):
    rule = get_object_or_404(AlertRule, pk=rule_id)
    audit.record_change(request, action="rule.delete", obj=rule)
    rule.delete()
    return redirect("alert_rules")


@require_GET
def history(request):
    alerts = Alert.objects.select_related("rule").prefetch_related("events")
    rule_id = request.GET.get("rule", "")
    if rule_id.isdigit():
        alerts = alerts.filter(rule_id=int(rule_id))
    state = request.GET.get("state", "")
    if state in dict(Alert.STATES):
        alerts = alerts.filter(state=state)
    page = Paginator(alerts.order_by("-pending_since"), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "alerts/history.html",
        {
            "page": page,
            "state": state,
            "rule_id": rule_id,
            "rules": AlertRule.objects.all(),
            "states": [s for s, _ in Alert.STATES],
        },
    )


def next_starts(*, expr: str, tz: str, now: dt.datetime) -> list[str]:
    """The next fire times as the people in ``tz`` read them (with the zone's abbreviation,
    which shows a daylight-saving change between two of them)."""
    return [
        t.astimezone(zone(tz)).strftime("%a %Y-%m-%d %H:%M %Z")
        for t in cron_next(expr=expr, tz=tz, after=now, count=PREVIEW_FIRES)
    ]


def _silences_context(now: dt.datetime, **extra) -> dict:
    windows = []
    for w in MaintenanceWindow.objects.select_related("rule"):
        try:
            upcoming = next_starts(expr=w.cron, tz=w.time_zone, now=now)
        except CronError:
            upcoming = []
        windows.append((w, upcoming))
    return {
        "active": Silence.objects.filter(ends_at__gt=now).select_related("rule").order_by("starts_at"),
        "expired": Silence.objects.filter(ends_at__lte=now).select_related("rule")[:20],
        "windows": windows,
        "silence_form": SilenceForm(initial={"starts_at": now.replace(second=0, microsecond=0), "hours": 2}),
        "window_form": MaintenanceWindowForm(initial={"time_zone": "UTC"}),
        **extra,
    }


@require_GET
def silences(request):
    return render(request, "alerts/silences.html", _silences_context(timezone.now()))


@role_required(ADMIN)
@require_POST
def silence_new(request):
    return _save_authored(request, SilenceForm(request.POST), "silence_form")


def _save_authored(request, form, form_name: str):
    """Save a silence or a window with the logged-in user as its author, or show the page
    again with the form's messages."""
    action = "silence.create" if form_name == "silence_form" else "window.create"
    if form.is_valid():
        row = form.save(commit=False)
        row.author = request.user.get_username()
        row.save()
        audit.record_change(request, action=action, obj=row)
        return redirect("silences")
    audit.record_change(request, action=action, obj=None, outcome=AuditEntry.REFUSED, message=audit.form_errors(form))
    return render(request, "alerts/silences.html", _silences_context(timezone.now(), **{form_name: form}), status=400)


@role_required(ADMIN)
@require_POST
def silence_expire(request, silence_id: int):
    if Silence.objects.filter(pk=silence_id, ends_at__gt=timezone.now()).update(ends_at=timezone.now()):
        audit.record_change(request, action="silence.expire", obj=Silence.objects.get(pk=silence_id))
    return redirect("silences")


@role_required(ADMIN)
@require_POST
def window_new(request):
    return _save_authored(request, MaintenanceWindowForm(request.POST), "window_form")


@role_required(ADMIN)
@require_POST
def window_delete(request, window_id: int):
    window = get_object_or_404(MaintenanceWindow, pk=window_id)
    audit.record_change(request, action="window.delete", obj=window)
    window.delete()
    return redirect("silences")


@require_GET
def cron_preview(request):
    """The next five fire times of a cron expression in its time zone (an htmx fragment)."""
    expr, tz = request.GET.get("cron", ""), request.GET.get("time_zone", "") or "UTC"
    if not expr.strip():  # an untouched form: a hint, not an error
        return render(request, "alerts/cron_preview.html", {"times": [], "error": "", "tz": tz, "untouched": True})
    try:
        times, error = next_starts(expr=expr, tz=tz, now=timezone.now()), ""
    except CronError as exc:
        times, error = [], str(exc)
    return render(request, "alerts/cron_preview.html", {"times": times, "error": error, "tz": tz})
