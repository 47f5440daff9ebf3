"""The leader's cadence: which of its steps runs when, as one ``queues.cron.Periodic``.

Each pass of the loop runs, in this order, what is due: a budgeted discovery step, the stall
probe, the tick (a full refresh of every queue), or instead of it the exact snapshot every
``snapshot_every``, the changes events brought since the last refresh, the flush, and the
periodic jobs (``periodic``). The steps themselves are ``loop.Monitor``'s; the loop sleeps
until the next one is due (``Periodic.seconds_until_next``) or the intake brings work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from dashboard.monitor.discovering import DISCOVERY_STEP_INTERVAL
from queues.cron import AFTER_START, ON_GRID, Cadence, Job, Periodic
from queues.keys import QueueRef

DIRTY_PUBLISH_INTERVAL = 0.05  # s: coalesce bursts of events into one refresh per queue
FLUSH_INTERVAL = 1.0
STALL_PROBE_INTERVAL = 1.0  # s between lock checks of long-active jobs


class LeaderSteps(Protocol):
    """What the schedule runs (``loop.Monitor``)."""

    tick: float
    snapshot_every: float

    def discover(self, cursors: dict[QueueRef, str]) -> None: ...
    def probe_stalls(self, dirty: set[QueueRef]) -> None: ...
    def refresh_all(self, dirty: set[QueueRef], *, exact: bool) -> None: ...
    def publish_changes(self, dirty: set[QueueRef]) -> None: ...
    def start_flush(self) -> None: ...
    def periodic_jobs(self) -> list[Job]: ...


def leader_schedule(
    steps: LeaderSteps,
    cursors: dict[QueueRef, str],
    dirty: set[QueueRef],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Periodic:
    """The leader's whole schedule for one term. ``cursors``: the term's stored stream cursors
    (discovery uses them up); ``dirty``: queues whose figures events changed, published between
    ticks (a tick publishes every queue and empties it). The leader's own steps keep a steady
    cadence (the next one an interval after this one started) and a failing one ends the term."""

    def step(name: str, run: Callable[[], object], every: float, cadence: Cadence = AFTER_START, **options) -> Job:
        return Job(name, run, every=every, cadence=cadence, propagate=True, **options)

    return Periodic(
        [
            step("discovery", lambda: steps.discover(cursors), DISCOVERY_STEP_INTERVAL),
            step("stall-probe", lambda: steps.probe_stalls(dirty), STALL_PROBE_INTERVAL),
            # On a fixed grid, not "interval after the last one": the load a snapshot puts on Redis
            # stays exactly periodic. A snapshot is also that moment's tick.
            step(
                "snapshot",
                lambda: steps.refresh_all(dirty, exact=True),
                steps.snapshot_every,
                cadence=ON_GRID,
                stands_in_for=("tick",),
            ),
            step("tick", lambda: steps.refresh_all(dirty, exact=False), steps.tick),
            step(
                "publish-changes",
                lambda: steps.publish_changes(dirty),
                DIRTY_PUBLISH_INTERVAL,
                only_when=lambda: bool(dirty),
            ),
            step("flush", steps.start_flush, FLUSH_INTERVAL),
            *steps.periodic_jobs(),
        ],
        clock=clock,
    )
