"""Channel pages: list, create, edit, delete, "send test", and the delivery log. Anyone logged in
may look; only admins change channels or send tests (``role_required(ADMIN)``; CSRF from the
middleware). Secrets are never put in a page."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.accounts.auth import ADMIN, role_required
from dashboard.alerts import notifiers
from dashboard.alerts.channels.forms import ChannelForm
from dashboard.alerts.models import Channel, DeliveryAttempt, Notification
from dashboard.alerts.notifiers.webhook import receiver_detail
from dashboard.alerts.sender import send_test
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry

LOG_PAGE_SIZE = 50


def with_channel(view):
    """Resolve ``channel_id`` to the channel, or answer 404 with a message saying so."""

    @functools.wraps(view)
    def wrapper(request, channel_id):
        channel = Channel.objects.filter(pk=channel_id).first()
        if channel is None:
            return render(
                request,
                "error.html",
                {
                    "title": _("Channel not found"),
                    "message": _("There is no channel %(id)s; it may have been deleted.") % {"id": channel_id},
                },
                status=404,
            )
        return view(request, channel)

    return wrapper


def destination(channel: Channel) -> str:
    """Where a channel sends, without anything secret (its kind says what that is)."""
    notifier = notifiers.NOTIFIERS.get(channel.kind)
    return notifier.destination(channel.config or {}) if notifier else ""


def variant(channel: Channel) -> str:
    notifier = notifiers.NOTIFIERS.get(channel.kind)
    return notifier.variant(channel.config or {}) if notifier else ""


def unavailable(channel: Channel) -> str:
    """Why the channel's kind cannot deliver in this deployment, for an enabled channel."""
    notifier = notifiers.NOTIFIERS.get(channel.kind)
    return notifier.unavailable() if notifier and channel.enabled else ""


@require_GET
def channel_list(request):
    channels = Channel.objects.order_by("name").annotate(
        pending=Count("notifications", filter=Q(notifications__state__in=[Notification.PENDING, Notification.SENDING])),
        failed=Count("notifications", filter=Q(notifications__state=Notification.FAILED)),
    )
    rows = [
        {"c": c, "destination": destination(c), "variant": variant(c), "unavailable": unavailable(c)} for c in channels
    ]
    return render(request, "alerts/channels.html", {"rows": rows})


def _channel_form(request, channel: Channel | None):
    form = ChannelForm(request.POST or None, channel=channel)
    action = "channel.update" if channel else "channel.create"
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        audit.record_change(request, action=action, obj=saved)
        done = _("Channel “%(name)s” saved.") if channel else _("Channel “%(name)s” created.")
        messages.success(request, done % {"name": saved.name})
        return redirect("channels")
    if request.method == "POST":
        audit.record_change(
            request, action=action, obj=channel, outcome=AuditEntry.REFUSED, message=audit.form_errors(form)
        )
    return render(request, "alerts/channel_form.html", {"form": form, "channel": channel})


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
def channel_create(request):
    return _channel_form(request, None)


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
@with_channel
def channel_edit(request, channel):
    return _channel_form(request, channel)


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
@with_channel
def channel_delete(request, channel):
    if request.method == "POST":
        audit.record_change(request, action="channel.delete", obj=channel)
        channel.delete()
        messages.success(
            request, _("Channel “%(name)s” deleted, with its outbox and delivery log.") % {"name": channel.name}
        )
        return redirect("channels")
    return render(
        request,
        "alerts/channel_delete.html",
        {
            "channel": channel,
            "queued": channel.notifications.filter(state__in=[Notification.PENDING, Notification.SENDING]).count(),
        },
    )


@role_required(ADMIN)
@require_POST
@with_channel
def channel_send_test(request, channel):
    result = send_test(channel=channel, requested_by=request.user.get_username())
    # The receiver's own words stay out of the audit log, which every viewer reads.
    audit.record_change(
        request,
        action="channel.test",
        obj=channel,
        outcome=AuditEntry.OK if result.ok else AuditEntry.ERROR,
        message=receiver_detail(result.detail, admin=False),
    )
    if result.ok:
        messages.success(
            request, _("Test sent to “%(name)s”: %(detail)s.") % {"name": channel.name, "detail": result.detail}
        )
    else:
        failed = (
            _("Test to “%(name)s” failed: %(detail)s. It stays in the outbox and will be retried.")
            if result.will_retry
            else _("Test to “%(name)s” failed: %(detail)s.")
        )
        messages.error(request, failed % {"name": channel.name, "detail": result.detail})
    return redirect("channel_log", channel_id=channel.pk)


@dataclass
class LogRow:
    """One row of the delivery log: an attempt, or a run of consecutive failed attempts that
    failed the same way (the newest shown, with how many and since when)."""

    attempt: DeliveryAttempt
    count: int = 1
    first_at: dt.datetime | None = None
    notifications: set = field(default_factory=set)


def group_attempts(attempts) -> list[LogRow]:
    """The attempts (newest first) with identical consecutive failures folded into one row: a
    receiver that is down answers every notification the same way, and the log should say it
    once, with a count, not repeat it."""
    rows: list[LogRow] = []
    for a in attempts:
        last = rows[-1] if rows else None
        if (
            last is not None
            and not a.ok
            and not last.attempt.ok
            and a.detail == last.attempt.detail
            and a.will_retry == last.attempt.will_retry
        ):
            last.count += 1
            last.first_at = a.at
            last.notifications.add(a.notification_id)
        else:
            rows.append(LogRow(a, first_at=a.at, notifications={a.notification_id}))
    return rows


@require_GET
@with_channel
def channel_log(request, channel):
    attempts = channel.attempt_log.select_related("notification").order_by("-at", "-id")
    page = Paginator(attempts, LOG_PAGE_SIZE).get_page(request.GET.get("page"))
    waiting = channel.notifications.filter(state__in=[Notification.PENDING, Notification.SENDING]).order_by(
        "next_attempt_at"
    )
    return render(
        request,
        "alerts/channel_log.html",
        {
            "channel": channel,
            "destination": destination(channel),
            "page": page,
            "rows": group_attempts(page),
            "waiting": waiting[:20],
            "waiting_count": waiting.count(),
            "failed_count": channel.notifications.filter(state=Notification.FAILED).count(),
        },
    )
