"""Which alerts and rules a user may read — all of them with a global role; those on their
queues for a user who sees only some (``dashboard.accounts.scopes``) — and the firing-alerts
banner, for everyone and per user."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q, QuerySet

from dashboard.accounts import scopes
from dashboard.accounts.auth import ADMIN, VIEWER
from dashboard.alerts.models import SEVERITIES, Alert, AlertRule
from dashboard.live import channels as live
from dashboard.live import fragments
from dashboard.live import scoped as live_scoped


def visible_alerts(user) -> QuerySet:
    """Alerts on the queues (and connections) ``user`` may see."""
    only = scopes.queue_filter(user)
    return Alert.objects.all() if only is None else Alert.objects.filter(only)


def visible_rules(user) -> QuerySet:
    """Rules a scoped user may read: those whose whole scope is theirs, and those with alerts
    on their queues (a rule on every queue fires on theirs too)."""
    rows = AlertRule.objects.all()
    if scopes.sees_everything(user):
        return rows
    mine = [r.pk for r in rows if scopes.covers(user, connection=r.connection, queue_glob=r.queue_glob, role=VIEWER)]
    return rows.filter(Q(pk__in=mine) | Q(pk__in=visible_alerts(user).values("rule_id")))


def readable(user, rows):
    """Silences or maintenance windows a user may read: all with a global role; for a scoped
    user, those whose whole scope (connection, queue glob) is theirs."""
    if scopes.sees_everything(user):
        return rows
    return [r for r in rows if scopes.covers(user, connection=r.connection, queue_glob=r.queue_glob, role=VIEWER)]


def may_edit_rule(user, *, connection: str, queue_glob: str) -> bool:
    """A rule (or a new one) with this scope: admin on every queue it can match."""
    return scopes.covers(user, connection=connection, queue_glob=queue_glob, role=ADMIN)


def may_author_rules(user) -> bool:
    """Whether the rule form is open to the user at all: a global admin, or an admin grant."""
    return scopes.covers(user, connection="", queue_glob="", role=ADMIN) or any(
        g.role == ADMIN for g in scopes.grants_of(user)
    )


@dataclass(frozen=True)
class FiringSummary:
    """What the banner every page shows says: firing alerts that are not silenced, the
    silenced ones apart (they still fire, but nobody is being told), and the worst severity
    among the first ("" when none)."""

    firing: int = 0
    silenced: int = 0
    worst: str = ""

    def __bool__(self) -> bool:
        return bool(self.firing or self.silenced)


def firing_summary(*, user=None) -> FiringSummary:
    """The banner's counts, with ``user``: of the alerts they may see. Two aggregate queries,
    whatever the number of firing alerts."""
    rows = (Alert.objects.all() if user is None else visible_alerts(user)).filter(state=Alert.FIRING)
    silenced = rows.exclude(silenced_by="").count()
    counted = rows.filter(silenced_by="").values("rule__severity").annotate(n=Count("id")).order_by()
    by_severity = {row["rule__severity"]: row["n"] for row in counted}
    order = [code for code, _label in SEVERITIES]  # mildest first
    worst = max(by_severity, key=lambda s: order.index(s) if s in order else -1, default="")
    return FiringSummary(firing=sum(by_severity.values()), silenced=silenced, worst=worst)


def firing_banner_for(user, language: str) -> str:
    """The banner of a scoped user's live socket (the shared one lists every team's alerts)."""
    html = fragments.firing_alerts(firing_summary(user=user))[1]
    return str(html) if language == settings.LANGUAGE_CODE else html.translations.get(language, str(html))


def register() -> None:
    """Scoped users' live sockets render their own banner (``dashboard.live.scoped``)."""
    live_scoped.per_user[live.FIRING_ALERTS_ID] = firing_banner_for
