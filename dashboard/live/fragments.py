"""Rendering the live fragments. Each function renders one template partial — the same
partial the full page includes — and returns ``(element_id, html)``. The monitor calls these
once per change and fans the result out; pages call them through their templates.

Fragments are rendered once per configured language (``LocalizedHtml``): the default
language's HTML is the string itself, the others ride along, and the publisher sends each to
its language's group (``channels.language_group``); a websocket joins its page's language's
groups (``dashboard.core.i18n.language_for_scope``). Two languages cost the monitor two renders of
each changed fragment."""

from __future__ import annotations

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation

from dashboard.accounts.auth import OPERATOR
from dashboard.live.channels import (
    BANNER_ID,
    FIRING_ALERTS_ID,
    JOB_ACTIONS_ID,
    job_live_id,
    job_table_id,
    queue_live_id,
    row_id,
    task_progress_id,
)
from dashboard.live.rates import QueueSignals
from dashboard.web.formatting import percent, rate_value
from queues.jobs import JobLive
from queues.keys import QueueRef
from queues.listing import DEFAULT_PAGE_SIZE, JobPage
from queues.rates import RATE_WINDOWS
from queues.states import BROWSABLE_STATES

LIVE_PAGE_SIZE = DEFAULT_PAGE_SIZE  # only page 1 at the default size is kept live


class LocalizedHtml(str):
    """A fragment in the default language (the string itself), with ``translations``: the same
    fragment rendered in every other configured language (language code -> html)."""

    translations: dict[str, str]


# The other languages to render live fragments in: every configured one unless the monitor
# narrows it to those someone is viewing (``only_render``). Rendering is most of the monitor's
# CPU on a busy system, so a language nobody views must not double it.
_rendered_languages: set[str] | None = None


def only_render(languages: set[str] | None) -> None:
    """Render other-language fragments only for ``languages`` (None: all configured)."""
    global _rendered_languages
    _rendered_languages = None if languages is None else set(languages)


def render_localized(template_name: str, context: dict) -> LocalizedHtml:
    with translation.override(settings.LANGUAGE_CODE):
        html = LocalizedHtml(render_to_string(template_name, context))
    html.translations = {}
    wanted = _rendered_languages
    for code, _name in settings.LANGUAGES:
        if code != settings.LANGUAGE_CODE and (wanted is None or code in wanted):
            with translation.override(code):
                html.translations[code] = render_to_string(template_name, context)
    return html


QUEUES_ADDED_ID = "queues-added"  # an empty element on every page (templates/base.html)


def queues_added(count: int) -> tuple[str, str]:
    """Queues appeared (``count`` since the monitor started leading): the overview reloads its
    tables when this element is swapped (static/queuewatch.js). The same in every language."""
    html = LocalizedHtml(f'<span id="{QUEUES_ADDED_ID}" hidden data-count="{int(count)}"></span>')
    html.translations = {code: str(html) for code, _name in settings.LANGUAGES if code != settings.LANGUAGE_CODE}
    return QUEUES_ADDED_ID, html


def overview_row(sig: QueueSignals) -> tuple[str, str]:
    """A queue's overview row; its cells are declared in ``dashboard.browse.columns``, which
    also says when the row changes (``columns.row_key``)."""
    q = sig.snapshot.queue
    return row_id(q), render_localized("browse/overview.html#queue-row", {"sig": sig, "s": sig.snapshot})


def queue_live(sig: QueueSignals, state: str = "") -> tuple[str, str]:
    q = sig.snapshot.queue
    return queue_live_id(q), render_localized(
        "browse/queue.html#queue-live",
        {"sig": sig, "snap": sig.snapshot, "queue": q, "state": state, "states": BROWSABLE_STATES},
    )


def queue_live_key(sig: QueueSignals) -> tuple:
    """Everything ``queue_live`` shows, as displayed: equal keys mean identical fragments, so
    the monitor skips rendering (the costly part) for unchanged queues."""
    s = sig.snapshot
    rates = tuple(
        rate_value(d[w])
        for d in (
            sig.completed_per_min,
            sig.failed_per_min,
            sig.attempt_failed_per_min,
            sig.dlq_growth_per_min,
            sig.stalled_per_min,
        )
        for w in RATE_WINDOWS
    )
    ratio = None if sig.failure_ratio is None else percent(sig.failure_ratio)
    return (
        tuple(s.counts.items()),
        s.paused,
        s.schedulers,
        s.legacy_paused_jobs,
        s.oldest_waiting_ts,
        s.oldest_waiting_bound,
        rates,
        ratio,
        tuple(sig.stalled_now),
        sig.stall_failed_15m,
        sig.is_dlq,
    )


def job_table(queue: QueueRef, page: JobPage, stalled_ids: list[str]) -> tuple[str, str]:
    element = job_table_id(queue, page.state)
    return element, render_localized(
        "browse/queue.html#job-table",
        {"queue": queue, "job_page": page, "state": page.state, "stalled_ids": set(stalled_ids)},
    )


def job_live(job: JobLive, *, read_at: int = 0) -> tuple[str, str]:
    """The job page's state, timeline, failure reason and logs; ``read_at``: ``read_stamp()``."""
    element = job_live_id(job.queue, job.id)
    context = {"live": job, "queue": job.queue, "read_at": read_at}
    return element, render_localized("browse/job.html#job-live", context)


def job_actions(job: JobLive, *, read_at: int = 0) -> tuple[str, str]:
    """The actions an operator may take on the job in its current state (a retried job failing
    again offers Retry again)."""
    context = {"job": job, "queue": job.queue, "live_role": OPERATOR, "read_at": read_at}
    return JOB_ACTIONS_ID, render_localized("actions/partials/job_actions.html", context)


def job_live_for_operators(job: JobLive, *, read_at: int = 0) -> tuple[str, str]:
    """What an operator's job page gets when the job changes: ``job_live`` and ``job_actions`` in
    one message, so the page swaps its state, timeline, failure reason and the actions that
    apply together (two messages could show a failed job with a running job's actions)."""
    element, live = job_live(job, read_at=read_at)
    _actions_id, actions = job_actions(job, read_at=read_at)
    both = LocalizedHtml(live + actions)
    live_translations = getattr(live, "translations", {})
    actions_translations = getattr(actions, "translations", {})
    both.translations = {code: html + actions_translations.get(code, "") for code, html in live_translations.items()}
    return element, both


def firing_alerts(summary) -> tuple[str, str]:
    """The firing-alerts chip every page carries ("4 firing · 1 silenced · worst critical"),
    from a ``dashboard.alerts.scoped.FiringSummary``; empty when nothing fires."""
    return FIRING_ALERTS_ID, render_localized("alerts/firing_chip.html", {"firing": summary})


def banner(down: dict[str, str]) -> tuple[str, str]:
    """The connection-lost banner every page carries; empty when all connections are up."""
    return BANNER_ID, render_localized("base.html#live-banner", {"down": down})


def task_progress(task) -> tuple[str, str]:
    """A background bulk task's progress (a ``BulkTask`` row), for its task group."""
    return task_progress_id(task.pk), render_localized("actions/task.html#task-progress", {"task": task})
