"""What each toolbox action does: a thin adapter from its validated input
(``dashboard.actions.toolbox.inputs``) to the framework-free domain (``queues.job_add``,
``queues.edit_retry``, ``queues.queue_settings``).

Their results are ``ToolResult``s: like ``runners.QueueActionResult`` (``ok``, ``outcome``,
``message``, ``affected``) plus ``audit`` (merged into the audit row's details: the before and
after of an edit, the id a job was added under) and ``body`` (extra fields for the API).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from dashboard.actions import edit_limits
from dashboard.actions.job_schemas import refused, schema_for
from dashboard.actions.toolbox.inputs import redacted_json
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core.i18n import translate
from dashboard.web.errors import InvalidInput
from dashboard.web.formatting import duration_text
from queues import actions, edit_growth, edit_retry, job_add, queue_settings
from queues.errors import NotAJob
from queues.job_options import InvalidJob
from queues.jobs import prepare_payload
from queues.keys import QueueRef
from queues.safe_json import loads_or
from queues.sources.facets import commands_of, jobs_of


@dataclass
class ToolResult:
    outcome: str
    message: str
    affected: int = 0
    audit: dict = field(default_factory=dict)
    body: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == actions.DONE

    @property
    def new_job_id(self) -> str | None:
        """The id of the job this action added (an add, a duplicate), which its message names."""
        return str(self.body["id"]) if self.body.get("created") else None


def _added(outcome: job_add.AddOutcome, *, new_job) -> ToolResult:
    redactor = get_redactor()
    after = {"name": new_job.name, "data": redacted_json(_parsed(new_job.data_json), redactor=redactor)}
    body = {"id": outcome.job_id, "created": outcome.created}
    if not outcome.created:
        body["reason"] = outcome.outcome
    return ToolResult(
        actions.DONE if outcome.created else outcome.outcome,
        translate(outcome.message),
        int(outcome.created),
        audit={"job_id": outcome.job_id, "after": after},
        body=body,
    )


def _parsed(text: str):
    return loads_or(text, text)


def add(source, *, queue: QueueRef, given) -> ToolResult:
    """Add a job; data the queue's schema refuses is a 400 that lists why (nothing written)."""
    try:
        outcome = commands_of(source).add(queue, job=given.job, schema=schema_for(queue))
    except InvalidJob as exc:
        raise refused(exc) from None
    return _added(outcome, new_job=given.job)


def duplicate(source, *, queue: QueueRef, job_id: str, given) -> ToolResult:
    try:
        original = jobs_of(source).duplicate_source(queue, job_id=job_id)
    except NotAJob:
        not_job = actions.not_a_job(job_id)
        return ToolResult(not_job.outcome, not_job.message)
    if original is None:
        return ToolResult(actions.MISSING, _("Job %(id)s no longer exists.") % {"id": job_id})
    copy = job_add.copy_of(original)
    try:
        outcome = commands_of(source).add(queue, job=copy, schema=schema_for(queue))
    except InvalidJob as exc:
        raise refused(exc) from None
    result = _added(outcome, new_job=copy)
    if outcome.created:
        result.message = _("Job %(id)s duplicated as job %(new)s.") % {"id": job_id, "new": outcome.job_id}
    return result


PAYLOAD_CAP = 200_000


def shown_data(queue: QueueRef, job_id: str):
    """A job's data as the edit page shows it (as stored, redacted, capped); None when the job
    is gone."""
    raw = get_registry().jobs(queue.connection).stored_data(queue, job_id)
    if raw is None:
        return None
    return prepare_payload(raw.decode("utf-8", "replace"), cap=PAYLOAD_CAP, redactor=get_redactor())


def edit_plan(source, *, queue: QueueRef, job_id: str, patch) -> edit_retry.EditPlan:
    try:
        plan = jobs_of(source).edit_plan(queue, job_id=job_id, patch=patch, schema=schema_for(queue))
    except edit_retry.PatchError as exc:
        raise InvalidInput(translate(exc.args[0])) from None
    if plan is None:
        raise InvalidInput(_("Job %(id)s no longer exists.") % {"id": job_id})
    return plan


def edit_and_retry(source, *, queue: QueueRef, job_id: str, given) -> ToolResult:
    plan = edit_plan(source, queue=queue, job_id=job_id, patch=given.patch)
    redactor = get_redactor()
    change = {
        "before": redacted_json(plan.before, redactor=redactor),
        "after": redacted_json(plan.after, redactor=redactor),
        "diff": plan.diff(redactor.value)[:400],
    }
    too_big = edit_growth.job_refusal(plan.growth, edit_limits.bounds(), job_id=job_id)
    if too_big is not None:
        return ToolResult(edit_growth.TOO_BIG, translate(too_big), audit={"change": change})
    if given.expected and given.expected != plan.fingerprint:
        return ToolResult(
            edit_retry.CHANGED,
            _("Job %(id)s's data changed since the preview; nothing was done. Preview the patch again.")
            % {"id": job_id},
            audit={"change": change},
        )
    done = commands_of(source).edit_and_retry(queue, plan=plan, reset_counters=given.reset_counters)
    return ToolResult(done.outcome, translate(done.message), int(done.ok), audit={"change": change})


# --- queue settings, drain, obliterate -------------------------------------------------------


def set_concurrency(source, *, queue: QueueRef, given) -> ToolResult:
    commands = commands_of(source)
    before = commands.settings(queue).concurrency
    commands.set_concurrency(queue, concurrency=given.concurrency)
    return ToolResult(
        actions.DONE,
        _("Global concurrency set to %(n)s.") % {"n": given.concurrency},
        1,
        audit={"change": {"before": before, "after": given.concurrency}},
    )


def remove_concurrency(source, *, queue: QueueRef, given) -> ToolResult:
    commands = commands_of(source)
    before = commands.settings(queue).concurrency
    commands.set_concurrency(queue, concurrency=None)
    return ToolResult(
        actions.DONE,
        _("Global concurrency removed: workers' own concurrency applies."),
        1,
        audit={"change": {"before": before, "after": None}},
    )


def set_rate_limit(source, *, queue: QueueRef, given) -> ToolResult:
    commands = commands_of(source)
    now = commands.settings(queue)
    commands.set_rate_limit(queue, max_jobs=given.max, duration_ms=given.duration)
    return ToolResult(
        actions.DONE,
        _("Global rate limit set to %(max)s jobs per %(per)s.")
        % {"max": given.max, "per": duration_text(given.duration / 1000)},
        1,
        audit={"change": {"before": [now.rate_max, now.rate_duration_ms], "after": [given.max, given.duration]}},
    )


def remove_rate_limit(source, *, queue: QueueRef, given) -> ToolResult:
    commands = commands_of(source)
    now = commands.settings(queue)
    commands.set_rate_limit(queue, max_jobs=None, duration_ms=None)
    return ToolResult(
        actions.DONE,
        _("Global rate limit removed."),
        1,
        audit={"change": {"before": [now.rate_max, now.rate_duration_ms], "after": None}},
    )


def rate_limit_now(source, *, queue: QueueRef, given) -> ToolResult:
    commands = commands_of(source)
    commands.rate_limit_for(queue, ms=given.ms)
    left = duration_text(given.ms / 1000)
    if commands.settings(queue).rate_max is None:
        # BullMQ's getRateLimitTTL applies the limiter only with a max: the global one, or a worker's.
        message = _(
            "Rate-limited for %(left)s. The queue has no global rate limit: only workers started with "
            "their own limiter wait; the others go on."
        )
    else:
        message = _("Rate-limited for %(left)s: no worker starts a job of this queue until then.")
    return ToolResult(actions.DONE, message % {"left": left}, 1)


def remove_rate_limit_key(source, *, queue: QueueRef, given) -> ToolResult:
    if commands_of(source).remove_rate_limit_key(queue):
        return ToolResult(actions.DONE, _("Rate-limit key removed: workers take jobs again now."), 1)
    return ToolResult(actions.DONE, _("There was no rate-limit key: the queue was not being rate-limited."), 0)


def drain(source, *, queue: QueueRef, given) -> ToolResult:
    removed = commands_of(source).drain(queue, delayed=given.delayed)
    what = _("waiting, prioritized and delayed") if given.delayed else _("waiting and prioritized")
    return ToolResult(
        actions.DONE, _("Drained: %(n)s %(what)s job(s) removed.") % {"n": removed, "what": what}, removed
    )


def obliterate(source, *, queue: QueueRef, given) -> ToolResult:
    if given.confirm != queue.name:
        return ToolResult(
            "not_confirmed",
            _("The name typed (%(typed)s) is not the queue's name (%(name)s); nothing was done.")
            % {"typed": given.confirm, "name": queue.name},
        )
    commands = commands_of(source)
    counts = commands.settings(queue)
    try:
        commands.obliterate(queue)
    except queue_settings.SettingRefused as exc:
        return ToolResult("refused", translate(exc.args[0]))
    return ToolResult(
        actions.DONE,
        _("Queue %(name)s obliterated: %(n)s job(s) and %(s)s scheduler(s) deleted.")
        % {"name": queue.name, "n": counts.total_jobs, "s": counts.counts["schedulers"]},
        counts.total_jobs,
        audit={"counts": counts.counts},
    )
