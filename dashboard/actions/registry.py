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

from dashboard.accounts.auth import ADMIN, OPERATOR, require, require_in_scope, role_of, role_refusal
from dashboard.actions import dlq_envelopes, job_schemas, runners
from dashboard.actions import job_tools as tools_of_jobs
from dashboard.actions import scheduler_actions as schedulers
from dashboard.actions.inputs import ActionInput, CleanInput, ReasonedInput, RetryInput, reason_from
from dashboard.actions.toolbox import inputs as tools
from dashboard.actions.toolbox import runners as toolbox_runners
from dashboard.web.errors import InvalidInput
from queues.flows import PENDING, FlowNode
from queues.keys import QueueRef
from queues.states import CHANGE_DELAY, CHANGE_PRIORITY, MOVE_TO_FAILED, PROMOTE, RETRY, state_allows

JOB, QUEUE = "job", "queue"  # what an action acts on: posted to the job_action or queue_action URL


@dataclass(frozen=True)
class Offer:
    """The page an action might be offered on: a job's page (``job`` is its detail) or a
    queue's page (``snap`` is its snapshot)."""

    queue: QueueRef
    is_dlq: bool
    job: Any = None
    snap: Any = None


def pending_child(where: Offer) -> bool:
    """A node of a flow tree its parent still waits for (``removeChildDependency`` applies)."""
    return isinstance(where.job, FlowNode) and where.job.exists and where.job.relation == PENDING


def has_pending_children(where: Offer) -> bool:
    """A node of a flow tree with children that have not run (``removeUnprocessedChildren``)."""
    return isinstance(where.job, FlowNode) and where.job.exists and where.job.pending > 0


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
    # Removes jobs the way BullMQ's drain, clean and obliterate do (``removeParentDependencyKey``
    # with ``hard``): a flow parent in another queue whose last pending child goes is moved to
    # wait without an event, so that queue's figures need an exact read too (docs/live-truth.md).
    releases_parents: bool = False
    # A change to production the page asks to confirm, with a reason it requires (the API takes
    # the reason as optional; either way the audit row keeps it when given).
    confirmed: bool = False

    @property
    def audit_label(self) -> str:
        return f"{self.scope}.{self.name}"

    @property
    def needs_reason(self) -> bool:
        return self.input.needs_reason

    def parse(self, params) -> ActionInput:
        return self.input.from_params(params)

    def parse_confirmed(self, params) -> ActionInput:
        """The input of a page's form: a confirmed action's reason is required there."""
        if self.confirmed:
            reason_from(params, required=True)
        return self.parse(params)


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


def authorized(user, *, scope: str, name: str, queue: QueueRef) -> Action:
    """The action, if ``user`` may take it on ``queue`` (else ``QueueNotFound`` for a queue
    outside their scope, ``PermissionDenied`` for its role or read-only mode)."""
    require_in_scope(user, queue, target=f"{scope}.{name}")  # first: another team's queue learns nothing
    action = lookup(scope, name)
    require(user, role=action.role, mutates_redis=action.mutates_redis, target=f"{scope}.{name}", queue=queue)
    return action


def offered(scope: str, where: Offer, *, user, role: str | None = None, queue: QueueRef | None = None) -> list[Action]:
    """The actions of ``scope`` to offer ``user`` on ``queue`` (or, given ``role``, anyone with
    that role) here: those offered at ``where`` that they may take (no button that could only
    answer 403)."""
    mine = role or role_of(user, queue)
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
    # The job tools (docs/actions.md, "Job tools"): offered where the connection has built them.
    Action(
        "change-priority",
        JOB,
        _("Change priority"),
        tools_of_jobs.PriorityInput,
        tools_of_jobs.change_priority,
        fields="actions/partials/priority_field.html",
        offered=tools_of_jobs.offered_for(CHANGE_PRIORITY),
        note=_("0 is no priority; 1 runs first. A waiting job is re-queued by it at once."),
    ),
    Action(
        "change-delay",
        JOB,
        _("Change delay"),
        tools_of_jobs.DelayInput,
        tools_of_jobs.change_delay,
        fields="actions/partials/delay_fields.html",
        offered=tools_of_jobs.offered_for(CHANGE_DELAY),
        note=_("The job becomes ready this long from now (not from when it was added)."),
    ),
    Action(
        "move-to-failed",
        JOB,
        _("Move to failed"),
        tools_of_jobs.FailInput,
        tools_of_jobs.move_to_failed,
        danger=True,
        offered=tools_of_jobs.offered_for(MOVE_TO_FAILED),
        note=_(
            "The reason becomes the job's failure reason. Refused while a worker holds the job's lock; "
            "BullMQ then applies the job's own options (removeOnFail, its flow parent, a deduplication successor)."
        ),
    ),
    # Flows (docs/actions.md, "Flows"): offered on the nodes of a flow tree (browse/flow.html).
    Action(
        "remove-child-dependency",
        JOB,
        _("Remove from parent's dependencies"),
        ReasonedInput,
        runners.remove_child_dependency,
        offered=pending_child,
        note=_("BullMQ's removeChildDependency: the parent stops waiting for this job, which runs on alone."),
    ),
    Action(
        "remove-unprocessed",
        JOB,
        _("Remove unprocessed children"),
        ReasonedInput,
        runners.remove_unprocessed_children,
        offered=has_pending_children,
        danger=True,
        note=_(
            "BullMQ's removeUnprocessedChildren: removes the children that have not run (and theirs); "
            "active ones are kept."
        ),
    ),
    Action("pause", QUEUE, _("Pause queue"), ActionInput, runners.pause, shown_when="running", confirmed=True),
    Action("resume", QUEUE, _("Resume queue"), ActionInput, runners.resume, shown_when="paused"),
    # Offered through its preview (the queue page's clean form and actions/bulk_preview.html).
    Action("clean", QUEUE, _("Clean"), CleanInput, runners.clean, offered=never, releases_parents=True),
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
        "rate-limit-now",
        QUEUE,
        _("Rate-limit now"),
        tools.RateLimitNowInput,
        toolbox_runners.rate_limit_now,
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
    Action(
        "drain",
        QUEUE,
        _("Drain"),
        tools.DrainInput,
        toolbox_runners.drain,
        offered=never,
        role=ADMIN,
        danger=True,
        releases_parents=True,
    ),
    Action(
        "obliterate",
        QUEUE,
        _("Obliterate"),
        tools.ObliterateInput,
        toolbox_runners.obliterate,
        offered=never,
        role=ADMIN,
        danger=True,
        releases_parents=True,
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
        "create-scheduler",
        QUEUE,
        _("Create scheduler"),
        schedulers.EditSchedulerInput,
        schedulers.create_scheduler,
        offered=never,
    ),
    Action(
        "run-scheduler",
        QUEUE,
        _("Run now"),
        schedulers.RunSchedulerInput,
        schedulers.run_scheduler,
        offered=never,
        note=_("Adds one job from the scheduler's template now; the scheduler's next run is unchanged."),
    ),
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
    # A deduplication key released from the queue's deduplication page (the id and its owner in the input).
    Action(
        "release-dedup-key",
        QUEUE,
        _("Release"),
        tools_of_jobs.ReleaseDedupInput,
        tools_of_jobs.release_dedup,
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
