"""Alerting pages: rules, alert history, silences and maintenance windows. Everyone logged in
reads them; only admins change them (``role_required("admin")``, CSRF on every POST)."""

from __future__ import annotations

import datetime as dt
import functools

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.accounts.auth import ADMIN, audit_refusal, require, role_required
from dashboard.alerts import scoped
from dashboard.alerts.forms import MaintenanceWindowForm, RuleForm, SilenceForm, initial_from
from dashboard.alerts.models import Alert, AlertRule, MaintenanceWindow, Silence
from dashboard.alerts.preview import rule_preview
from dashboard.alerts.relabel import relabel_silenced
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from queues import alert_kinds
from queues.cron import CronError, cron_next, zone

PREVIEW_FIRES = 5
OUTSIDE_SCOPE_RULE = _("You may only have rules on queues you hold the admin role on.")


def rule_editor(view):
    """Changing a rule: a global admin, or a scoped user holding admin on every queue the rule
    can match (``scoped.may_edit_rule``); a rule they may not read is not found, one they may
    read but not change is refused (403)."""

    @functools.wraps(view)
    def wrapper(request, rule_id: int | None = None):
        if not scoped.may_author_rules(request.user):
            require(request.user, role=ADMIN, target=f"{request.method} {request.path}")
        rule = get_object_or_404(scoped.visible_rules(request.user), pk=rule_id) if rule_id else None
        if rule is not None and not scoped.may_edit_rule(
            request.user, connection=rule.connection, queue_glob=rule.queue_glob
        ):
            why = str(OUTSIDE_SCOPE_RULE)
            audit_refusal(request.user, kind="role", target=f"{request.method} {request.path}", message=why)
            raise PermissionDenied(why)
        return view(request, rule)

    return wrapper


@require_GET
def rules(request):
    firing = {r["rule"]: r["n"] for r in _count_firing(request.user)}
    items = [(r, firing.get(r.pk, 0)) for r in scoped.visible_rules(request.user).prefetch_related("channels")]
    return render(request, "alerts/rules.html", {"items": items, "kinds": alert_kinds.KINDS.values()})


def _count_firing(user):
    from django.db.models import Count

    # Silenced alerts still fire, but nobody is told: they are not counted as firing.
    firing = scoped.visible_alerts(user).filter(state=Alert.FIRING, silenced_by="")
    return firing.values("rule").annotate(n=Count("id")).order_by()


@rule_editor
@require_http_methods(["GET", "POST"])
def rule_edit(request, rule: AlertRule | None):
    """Create or edit a rule. The "Preview" button replays the form's rule over the last
    24 hours of stored history without saving it. A post whose kind is not the one its fields
    were shown for (a page without JavaScript, after choosing another kind) shows that kind's
    fields with what was typed, and saves nothing."""
    if request.method == "POST" and _kind_changed(request.POST):
        form = RuleForm(initial=initial_from(request.POST), instance=rule)
        return _rule_page(request, form, rule, None, switched=True)
    form = RuleForm(request.POST or None, instance=rule)
    preview = None
    if (
        request.method == "POST"
        and form.is_valid()
        and not scoped.may_edit_rule(
            request.user, connection=form.cleaned_data["connection"], queue_glob=form.cleaned_data["queue_glob"]
        )
    ):
        form.add_error("queue_glob", OUTSIDE_SCOPE_RULE)
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
    return _rule_page(request, form, rule, preview)


def _kind_changed(data) -> bool:
    shown = data.get("shown_kind")
    return "switch_kind" in data or bool(shown and shown != data.get("kind"))


def _rule_page(request, form, rule, preview, *, switched: bool = False):
    return render(
        request,
        "alerts/rule_form.html",
        {"form": form, "rule": rule, "preview": preview, "kinds": alert_kinds.KINDS.values(), "switched": switched},
    )


@rule_editor
@require_GET
def rule_kind_fields(request, rule: AlertRule | None):
    """The rule form's fields of the kind chosen (an htmx swap when the kind changes), with
    the values typed so far."""
    form = RuleForm(initial=initial_from(request.GET))
    return render(request, "alerts/rule_form.html#kind-fields", {"form": form})


@require_GET
def rule_detail(request, rule_id: int):
    rule = get_object_or_404(scoped.visible_rules(request.user), pk=rule_id)
    wanted = request.GET.get("preview") == "1"  # a replay is not free: on request only
    return render(
        request,
        "alerts/rule_detail.html",
        {
            "rule": rule,
            "preview": rule_preview(rule=rule, now=timezone.now()) if wanted else None,
            "open": scoped.visible_alerts(request.user).filter(rule=rule, state__in=Alert.OPEN),
        },
    )


@rule_editor
@require_POST
def rule_delete(request, rule: AlertRule):
    audit.record_change(request, action="rule.delete", obj=rule)
    rule.delete()
    return redirect("alert_rules")


@require_GET
def history(request):
    alerts = scoped.visible_alerts(request.user).select_related("rule").prefetch_related("events")
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
            "rules": scoped.visible_rules(request.user),
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


SILENCE_MATCHERS = ("rule", "connection", "queue_glob")


def _silences_context(now: dt.datetime, user, prefill: dict | None = None, **extra) -> dict:
    windows = []
    for w in scoped.readable(user, MaintenanceWindow.objects.select_related("rule")):
        try:
            upcoming = next_starts(expr=w.cron, tz=w.time_zone, now=now)
        except CronError:
            upcoming = []
        windows.append((w, upcoming))
    return {
        "active": scoped.readable(
            user, Silence.objects.filter(ends_at__gt=now).select_related("rule").order_by("starts_at")
        ),
        "expired": scoped.readable(user, Silence.objects.filter(ends_at__lte=now).select_related("rule")[:20]),
        "windows": windows,
        "silence_form": SilenceForm(
            initial={"starts_at": now.replace(second=0, microsecond=0), "hours": 2, **(prefill or {})}
        ),
        "prefilled": bool(prefill),
        "window_form": MaintenanceWindowForm(initial={"time_zone": "UTC"}),
        **extra,
    }


@require_GET
def silences(request):
    """The silences page; ``?rule=&connection=&queue_glob=`` fill the new silence's matchers
    (the Silence button of a firing alert links here with its own)."""
    prefill = {k: request.GET[k] for k in SILENCE_MATCHERS if request.GET.get(k)}
    return render(request, "alerts/silences.html", _silences_context(timezone.now(), request.user, prefill))


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
        relabel_silenced(timezone.now())
        return redirect("silences")
    audit.record_change(request, action=action, obj=None, outcome=AuditEntry.REFUSED, message=audit.form_errors(form))
    return render(
        request,
        "alerts/silences.html",
        _silences_context(timezone.now(), request.user, **{form_name: form}),
        status=400,
    )


@role_required(ADMIN)
@require_POST
def silence_expire(request, silence_id: int):
    if Silence.objects.filter(pk=silence_id, ends_at__gt=timezone.now()).update(ends_at=timezone.now()):
        audit.record_change(request, action="silence.expire", obj=Silence.objects.get(pk=silence_id))
        relabel_silenced(timezone.now())
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
    relabel_silenced(timezone.now())
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
