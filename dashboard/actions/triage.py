"""Error triage on the error groups page: each group's class (built-in
patterns plus the admins' ``TriageRule`` rows, ``queues.error_triage``), what to do about it,
and the guard that keeps a permanent group from a blind retry."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from dashboard.actions.models import TriageRule
from dashboard.web.errors import InvalidInput
from queues import error_triage
from queues.error_groups import ErrorGroup

RETRYING_ACTIONS = ("retry", "redrive")


@dataclass
class TriagedGroup:
    group: ErrorGroup
    triage: error_triage.Triage
    outlook: error_triage.RetryOutlook

    @property
    def permanent(self) -> bool:
        return self.triage.error_class == error_triage.PERMANENT

    @property
    def transient(self) -> bool:
        return self.triage.error_class == error_triage.TRANSIENT


def user_rules() -> list[error_triage.UserRule]:
    return [r.as_rule() for r in TriageRule.objects.all()]


def triaged(groups: list[ErrorGroup]) -> list[TriagedGroup]:
    rules = user_rules()
    return [
        TriagedGroup(
            g,
            error_triage.classify(g.sample_reason or g.normalized, user_rules=rules),
            error_triage.retry_outlook(last_5m=g.last_5m, prior_15m=g.prior_15m),
        )
        for g in groups
    ]


def refuse_blind_retry(params) -> None:
    """A retry or redrive of a group the page showed as permanent needs its confirmation box
    ticked (the form names the class); without it, a message saying so. (The class travels with
    the form: this guards people from a blind click, it is not a permission.)"""
    if (
        params.get("triage_class") == error_triage.PERMANENT
        and params.get("action") in RETRYING_ACTIONS
        and params.get("confirm_class") != error_triage.PERMANENT
    ):
        raise InvalidInput(
            _(
                "This error group is classed permanent: the same input will most likely fail again "
                "and use up attempts. Tick “Retry anyway: this group is permanent” to retry it "
                "anyway, or discard it."
            )
        )
