"""Rule kinds on the monitor's wait and processing times: "p95 wait time above T" and
"p95 processing time above T", of a whole queue or per job name — the SLO a user actually has.

The figures are the monitor's own per-job-name histograms (``queues.timings``, fed by
``queues.job_clock`` from the events stream): no Redis read. A window sums the minutes that
overlap it, as the timings API does, so an alert and ``/api/v1/…/timings`` agree.

A rule without a job name has one alert per queue (every name's samples together); with a job
name or glob, one alert per matching job name (the target's item is the name). A window with
fewer timed jobs than the rule's minimum volume measures 0 — too few to judge, as the failure
ratio does — so a queue that went quiet resolves rather than keep a stale percentile firing.
"""

from __future__ import annotations

import fnmatch
from typing import ClassVar

from ..messages import _
from ..timings import NameMinute, merged
from . import summaries as says
from .base import (
    JOB_NAME,
    MIN_VOLUME,
    QUEUE,
    WINDOW,
    Facts,
    Observation,
    RuleKind,
    Target,
    compare,
    in_scope,
    window_of,
)


class _P95Above(RuleKind):
    scope = QUEUE
    unit = _("seconds")
    params = frozenset({WINDOW, MIN_VOLUME, JOB_NAME})
    item_noun = "job name"
    # The stored history has the per-name minutes, but the preview replays queue counters only.
    replayable = False
    figure: ClassVar[str]  # "wait" or "processing": the NameMinute histogram it reads

    def observe(self, *, rule, facts: Facts, now) -> list[Observation]:
        w = window_of(rule)
        glob = (getattr(rule, "job_name", "") or "").strip()
        out = []
        for sig in facts.queues:
            q = sig.snapshot.queue
            if not in_scope(rule, connection=q.connection, queue=q.name) or not facts.reachable(q.connection):
                continue
            by_name = sig.timings_window(w)
            if not glob:
                out.append(self._compare(rule, Target(q.connection, q.prefix, q.name), merged(by_name.values()), w))
                continue
            # Every name seen, not only those timed in the window: a name gone quiet measures 0
            # (and resolves) rather than vanish from the observations.
            for name in sorted(n for n in sig.job_names() | set(by_name) if fnmatch.fnmatchcase(n, glob)):
                target = Target(q.connection, q.prefix, q.name, name)
                out.append(self._compare(rule, target, by_name.get(name) or NameMinute(), w))
        return out

    def _compare(self, rule, target: Target, figures: NameMinute, w: int) -> Observation:
        hist = getattr(figures, self.figure)
        n = hist.count
        if n == 0 or n < rule.min_volume:
            said = says.summary(says.TOO_FEW_TIMED[self.figure], n=n, w=w, min=max(1, rule.min_volume))
            return compare(rule, target, 0.0, said)
        p95_s = hist.percentile(0.95) / 1000
        said = says.summary(says.P95[self.figure], p95=says.duration(p95_s), n=n, w=w)
        return compare(rule, target, round(p95_s, 3), said)

    def describe(self, rule) -> str:
        text = super().describe(rule)
        name = (getattr(rule, "job_name", "") or "").strip()
        return _("{condition}, job name {name}", condition=text, name=name) if name else text


class WaitP95(_P95Above):
    id, title = "wait_p95", _("p95 wait time above T")
    help = _(
        "95th percentile of the time jobs waited before a worker took them (added or due → active), over "
        "the window; of the whole queue, or per job name when a job name (or glob) is given."
    )
    figure = "wait"


class ProcessingP95(_P95Above):
    id, title = "processing_p95", _("p95 processing time above T")
    help = _(
        "95th percentile of the time workers took to finish a job (active → completed or finally failed), over "
        "the window; of the whole queue, or per job name when a job name (or glob) is given."
    )
    figure = "processing"
