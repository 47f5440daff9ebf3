"""The actions an operator can take on one job or one queue, declared once.

Each ``Action`` says everything the rest of the app needs: its name (the URL segment), the
input it reads (``dashboard.actions.inputs``), the role it needs and whether it writes to
the monitored Redis (``dashboard.accounts.auth``), what it runs (``dashboard.actions.runners``,
over ``queues.actions``), the label the audit log keeps, and where it is offered (a button on
the job or queue page when ``offered`` says so). The page views, the API views, the audit
rows and the page templates (``{% offered_actions %}``) all read this table: adding an action
is one ``register`` call here (plus its input class and domain function, if new ones).

Bulk actions are not here: they run in the background through the bulk engine
(``queues.bulk``, ``dashboard.actions.services.bulk_start``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_lazy as _

from dashboard.accounts.auth import ADMIN, OPERATOR, require, role_of, role_refusal
from dashboard.actions import dlq_envelopes, job_schemas, runners
from dashboard.actions import scheduler_actions as schedulers
from dashboard.actions.inputs import ActionInput, CleanInput, ReasonedInput, RetryInput
from dashboard.actions.toolbox import inputs as tools
from dashboard.actions.toolbox import runners as toolbox_runners
from dashboard.web.errors import InvalidInput
from queues.keys import QueueRef
from queues.states import PROMOTE, RETRY, state_allows

JOB, QUEUE = "job", "queue"  # what an action acts on: posted to the job_action or queue_action URL


@dataclass(frozen=True)
class Offer:
    """The page an action might be offered on: a job's page (``job`` is its detail) or a
    queue's page (``snap`` is its snapshot)."""

    queue: QueueRef
    is_dlq: bool
    job: Any = None
    snap: Any = None


def always(where: Offer) -> bool:
    return True


def never(where: Offer) -> bool:
    return False


@dataclass(frozen=True)
class Action:
    name: str
    scope: str  # JOB or QUEUE
    label: str  # the button
    input: type[ActionInput]
    run: Callable  # runners' signature for the scope
    offered: Callable[[Offer], bool] = always
    role: str = OPERATOR
    mutates_redis: bool = True
    danger: bool = False  # drawn as a destructive button
    note: str = ""  # a line of help next to the button
    fields: str = ""  # template with extra form fields, shown after the button
    needs_user: bool = False  # the runner is also given ``user=`` (it records who, e.g. a stored setting)
    # A queue action drawn either way but shown only while the queue is "paused" or "running":
    # the page swaps pause for resume as its live state changes (data-qw-shown-when, queuewatch.js).
    shown_when: str = ""

    @property
    def audit_label(self) -> str:
        return f"{self.scope}.{self.name}"

    @property
    def needs_reason(self) -> bool:
        return self.input.needs_reason

    def parse(self, params) -> ActionInput:
        return self.input.from_params(params)


_ACTIONS: dict[tuple[str, str], Action] = {}


def register(action: Action) -> Action:
    key = (action.scope, action.name)
    if key in _ACTIONS:
        raise KeyError(f"{action.audit_label} is already registered")
    _ACTIONS[key] = action
    return action


def unregister(scope: str, name: str) -> None:
    del _ACTIONS[(scope, name)]


def names(scope: str) -> tuple[str, ...]:
    return tuple(name for s, name in _ACTIONS if s == scope)


def lookup(scope: str, name: str) -> Action:
    try:
        return _ACTIONS[(scope, name)]
    except KeyError:
        raise InvalidInput(f"Unknown {scope} action '{name}'. Choose one of: {', '.join(names(scope))}.") from None


def authorized(user, *, scope: str, name: str) -> Action:
    """The action, if ``user`` may take it (else ``PermissionDenied``: its role, read-only mode)."""
    action = lookup(scope, name)
    require(user, role=action.role, mutates_redis=action.mutates_redis, target=f"{scope}.{name}")
    return action


def offered(scope: str, where: Offer, *, user, role: str | None = None) -> list[Action]:
    """The actions of ``scope`` to offer ``user`` (or, given ``role``, anyone with that role)
    here: those offered at ``where`` that they may take (no button that could only answer 403)."""
    mine = role or role_of(user)
    return [
        a
        for (s, _), a in _ACTIONS.items()
        if s == scope and a.offered(where) and role_refusal(mine, role=a.role, mutates_redis=a.mutates_redis) is None
    ]


for _action in (
    Action(
        "retry",
        JOB,
        _("Retry"),
        RetryInput,
        runners.retry,
        fields="actions/partials/keep_counters.html",
        offered=lambda where: state_allows(where.job.state, RETRY),
    ),
    Action(
        "promote",
        JOB,
        _("Promote (run now)"),
        ActionInput,
        runners.promote,
        offered=lambda where: state_allows(where.job.state, PROMOTE),
    ),
    Action(
        "redrive", JOB, _("Redrive to source queue"), ReasonedInput, runners.redrive, offered=lambda where: where.is_dlq
    ),
    Action(
        "discard",
        JOB,
        _("Discard"),
        ReasonedInput,
        runners.discard,
        danger=True,
        note=_(
            "Removes the job (the result says what happened to its children); refused while a worker holds "
            "its lock or if it is a scheduler's current iteration."
        ),
    ),
    Action("pause", QUEUE, _("Pause queue"), ActionInput, runners.pause, shown_when="running"),
    Action("resume", QUEUE, _("Resume queue"), ActionInput, runners.resume, shown_when="paused"),
    # Offered through its preview (the queue page's clean form and actions/bulk_preview.html).
    Action("clean", QUEUE, _("Clean"), CleanInput, runners.clean, offered=never),
    # The operator toolbox (docs/actions.md, "Toolbox"). Add and edit-and-retry have their own
    # pages (a form, a diff preview); queue settings, drain and obliterate are on the admin's
    # queue settings page.
    Action("add", QUEUE, _("Add job"), tools.AddJobInput, toolbox_runners.add, offered=never),
    Action(
        "duplicate",
        JOB,
        _("Duplicate"),
        ActionInput,
        toolbox_runners.duplicate,
        note=_("Adds a copy of this job (its data and options as stored) under a new id."),
    ),
    Action("edit-retry", JOB, _("Edit and retry"), tools.EditRetryInput, toolbox_runners.edit_and_retry, offered=never),
    Action(
        "set-concurrency",
        QUEUE,
        _("Set global concurrency"),
        tools.ConcurrencyInput,
        toolbox_runners.set_concurrency,
        offered=never,
        role=ADMIN,
    ),
    Action(
        "remove-concurrency",
        QUEUE,
        _("Remove global concurrency"),
        ActionInput,
        toolbox_runners.remove_concurrency,
        offered=never,
        role=ADMIN,
    ),
    Action(
        "set-rate-limit",
        QUEUE,
        _("Set global rate limit"),
        tools.RateLimitInput,
        toolbox_runners.set_rate_limit,
        offered=never,
        role=ADMIN,
    ),
    Action(
        "remove-rate-limit",
        QUEUE,
        _("Remove global rate limit"),
        ActionInput,
        toolbox_runners.remove_rate_limit,
        offered=never,
        role=ADMIN,
    ),
    Action(
        "remove-rate-limit-key",
        QUEUE,
        _("Remove rate-limit key"),
        ActionInput,
        toolbox_runners.remove_rate_limit_key,
        offered=never,
        role=ADMIN,
    ),
    Action("drain", QUEUE, _("Drain"), tools.DrainInput, toolbox_runners.drain, offered=never, role=ADMIN, danger=True),
    Action(
        "obliterate",
        QUEUE,
        _("Obliterate"),
        tools.ObliterateInput,
        toolbox_runners.obliterate,
        offered=never,
        role=ADMIN,
        danger=True,
    ),
    # A queue's job schema (docs/actions.md, "Job schema"): stored in the database, not in Redis;
    # refused in read-only mode all the same, as every other queue setting.
    Action(
        "set-schema",
        QUEUE,
        _("Save job schema"),
        job_schemas.SchemaInput,
        job_schemas.set_schema,
        offered=never,
        role=ADMIN,
        needs_user=True,
    ),
    Action(
        "remove-schema",
        QUEUE,
        _("Remove job schema"),
        ActionInput,
        job_schemas.remove_schema,
        offered=never,
        role=ADMIN,
        danger=True,
        needs_user=True,
    ),
    # What a dead-letter queue's jobs carry (its envelope), confirmed on the redrive preview;
    # stored in the database (dashboard.connections.dead_letters), refused in read-only mode too.
    Action(
        "set-dlq-envelope",
        QUEUE,
        _("Confirm the dead letters' shape"),
        dlq_envelopes.EnvelopeInput,
        dlq_envelopes.set_envelope,
        offered=never,
        role=ADMIN,
        needs_user=True,
    ),
    # Job schedulers (forms on the schedulers page; the scheduler is named in the input).
    Action(
        "edit-scheduler",
        QUEUE,
        _("Save scheduler"),
        schedulers.EditSchedulerInput,
        schedulers.edit_scheduler,
        offered=never,
    ),
    Action(
        "remove-scheduler",
        QUEUE,
        _("Remove scheduler"),
        schedulers.RemoveSchedulerInput,
        schedulers.remove_scheduler,
        offered=never,
        danger=True,
    ),
    Action(
        "migrate-repeat",
        QUEUE,
        _("Migrate to a job scheduler"),
        schedulers.MigrateRepeatInput,
        schedulers.migrate_repeat,
        offered=never,
    ),
):
    register(_action)
