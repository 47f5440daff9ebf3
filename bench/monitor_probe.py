"""Run the Queuewatch monitor exactly like ``manage.py monitor`` does, with timers around its steps.

    python bench/monitor_probe.py          (cwd: the Queuewatch code directory, env as for the monitor)

Used by ``redis_load.py --probe`` and ``live_latency.py --probe`` to say what the monitor spends
its time on. Nothing in the product is changed: methods are wrapped at run time. Every line
``snap`` on stdin is answered with one JSON line ``{"probe": {step: {n, total_ms, p50_ms, p95_ms,
max_ms, ...}}}`` for the steps since the previous ``snap``. Steps:

* ``refresh_exact`` / ``refresh_full`` / ``refresh_dirty``: ``Monitor.refresh`` (with ``queues``: queues per call);
* ``take_snapshots`` (exact reads), ``apply_events``, ``count_attempt_failures``, ``learn_keep_counts``,
  ``publish_state``, ``without_lock``, ``read_summaries``, ``read_watched``: Redis reads;
* ``render_*``: the fragment renders (Django templates);
* ``publish``: ``Publisher.publish`` (dashboard-Redis write + hand-off to the channel layer);
* ``flush``, ``discover``, ``lock_extend``, ``handle`` (one item from the event intake): the rest of the loop;
* ``lock_extend``/``lock_lost``: leader-lock extensions and failed ones;
* ``loop_gap``: the time between two lock extensions (before the lock had its own heartbeat
  thread, > TTL meant leadership was lost);

With ``QW_PROBE_CPROFILE=<file>`` in the environment, the leader loop's thread also runs under
cProfile and its stats are written to that file when the monitor stops. With
``QW_PROBE_TRACEMALLOC=<file>``, ``tracemalloc`` traces every allocation and a ``memory`` line
on stdin writes the 40 lines holding the most memory to that file (allocation is then slower:
the run's CPU figures do not hold), and ``<file>.health`` gets the same at the end of each health
run, with the most traced during the run. A ``heap`` line is answered with ``{"heap": {...}}``: the
RSS, then after a full collection, then after glibc's ``malloc_trim``.
* ``job_<name>``: each scheduled job's own time, with ``rss_growth_max_mib``, the most one run
  of it grew the RSS;
* ``tick_late``: how long after it fell due each tick (or snapshot) started;
* ``gc_gen0``..``gc_gen2``: Python's cyclic garbage collections, by generation;
* with ``QW_PROBE_TIMELINE=<file>``: every timed step and collection is also kept with its wall
  start and end (and ``sent:<group>:<element>`` for each fragment handed to the channel layer),
  appended to that file as JSON lines on a ``timeline`` line on stdin: what the loop was doing
  when a given update was late;
* ``loop_stall``: sampled every 0.25 s when the monitor has ``progress`` (the heartbeat era): how
  long ago the leader loop last started an iteration -- how stale the live view can get.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from dashboard.live import channels as live  # noqa: E402
from dashboard.live import fragments  # noqa: E402
from dashboard.monitor import (  # noqa: E402
    intake,
    publishing,
    refreshing,
    tracking,
)
from dashboard.monitor import loop as mon  # noqa: E402
from dashboard.monitor.gc_tuning import tune_for_the_monitor  # noqa: E402
from queues import cron  # noqa: E402
from queues.redis import leader  # noqa: E402

_lock = threading.Lock()
_samples: dict[str, list[float]] = collections.defaultdict(list)
_sizes: dict[str, list[int]] = collections.defaultdict(list)
_rss_growth: dict[str, float] = {}  # scheduled job -> the most its one run grew the RSS (MiB)


_TIMELINE = os.environ.get("QW_PROBE_TIMELINE")
_timeline: list[tuple[str, float, float]] = []  # (step, wall start, wall end), with QW_PROBE_TIMELINE


def record(name: str, seconds: float, size: int | None = None) -> None:
    with _lock:
        _samples[name].append(seconds)
        if size is not None:
            _sizes[name].append(size)
        if _TIMELINE:
            end = time.time()
            _timeline.append((name, end - seconds, end))


def timed(owner, attr: str, name: str, size=None) -> None:
    orig = getattr(owner, attr, None)
    if orig is None:  # a step the code measured no longer has (renamed or gone): not timed
        return

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            label = name(args, kwargs) if callable(name) else name
            record(label, time.perf_counter() - t, size(args, kwargs) if size else None)

    setattr(owner, attr, wrapper)


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))]


_gc_started: list[float] = []
# Made up front, so that a collection (which may run inside any allocation, even snap()'s copy)
# only appends to an existing list.
_gc_samples: dict[int, list[float]] = {0: [], 1: [], 2: []}


def _time_gc(phase: str, info: dict) -> None:
    """Python's cyclic garbage collections, by generation (``gc_gen0``..``gc_gen2``): a monitor of
    10,000 queues holds hundreds of thousands of long-lived objects, which a full collection walks."""
    if phase == "start":
        _gc_started[:] = [time.perf_counter()]
    elif _gc_started:
        # Not under _lock: a collection can start while a thread holds it.
        took = time.perf_counter() - _gc_started[0]
        _gc_samples[info.get("generation", 2)].append(took)
        if _TIMELINE:
            end = time.time()
            _timeline.append((f"gc_gen{info.get('generation', 2)}", end - took, end))


def snap() -> dict:
    with _lock:
        samples, sizes, growth = dict(_samples), dict(_sizes), dict(_rss_growth)
        _samples.clear()
        _sizes.clear()
        _rss_growth.clear()
    for generation, taken in _gc_samples.items():
        if taken:
            samples[f"gc_gen{generation}"], taken[:] = list(taken), []
    out = {}
    for name, vals in samples.items():
        out[name] = {
            "n": len(vals),
            "total_ms": round(sum(vals) * 1000, 1),
            "p50_ms": round(_pct(vals, 50) * 1000, 2),
            "p95_ms": round(_pct(vals, 95) * 1000, 2),
            "max_ms": round(max(vals) * 1000, 1),
        }
        if sizes.get(name):
            out[name]["mean_size"] = round(sum(sizes[name]) / len(sizes[name]), 1)
        if name.startswith("job_") and name[4:] in growth:
            out[name]["rss_growth_max_mib"] = round(growth.pop(name[4:]), 1)
    for name, grew in growth.items():  # work outside the schedule, not timed as a job
        out[f"job_{name}"] = {"rss_growth_max_mib": round(grew, 1)}
    with _lock:
        if _rss_peaks:
            out["rss_peaks"], _rss_peaks[:] = list(_rss_peaks), []
    _rss_window.set()
    return out


# --- wrap the monitor's steps --------------------------------------------------------------------
M = mon.Monitor
timed(
    M,
    "refresh",
    lambda a, kw: "refresh_exact" if kw.get("exact") else "refresh_full" if kw.get("full") else "refresh_dirty",
    size=lambda a, kw: len(a[1]),
)
timed(M, "flush", "flush")
timed(M, "discover", "discover")
timed(intake.EventIntake, "handle", "handle")
timed(refreshing.Refresher, "read_watched", "read_watched")
timed(tracking.CountTracker, "take_snapshots", "take_snapshots", size=lambda a, kw: len(a[2]))
timed(tracking.CountTracker, "apply_events", "apply_events", size=lambda a, kw: len(a[1]))
timed(tracking.CountTracker, "count_attempt_failures", "count_attempt_failures")
timed(tracking.CountTracker, "learn_keep_counts", "learn_keep_counts")
timed(M, "publish_state", "publish_state")
timed(tracking, "without_lock", "without_lock", size=lambda a, kw: sum(map(len, a[1].values())))
timed(tracking.CountTracker, "probe_stalls", "probe_stalls")
timed(publishing.QueuePublisher, "publish_list", "publish_list")
timed(publishing, "read_summaries", "read_summaries", size=lambda a, kw: len(a[2]))
for fn in ("overview_row", "queue_live", "job_table", "job_live", "banner"):
    if hasattr(fragments, fn):
        timed(fragments, fn, f"render_{fn}")
timed(live.Publisher, "publish", "publish")
if _TIMELINE:
    # Which group each fragment went to, and when: the timeline tells a slow update's steps.
    _orig_publish_one = live.Publisher._publish_one

    def _publish_one_noted(self, group, element_id, *a, **kw):
        sent = _orig_publish_one(self, group, element_id, *a, **kw)
        if sent:
            with _lock:
                _timeline.append((f"sent:{group}:{element_id}", time.time(), time.time()))
        return sent

    live.Publisher._publish_one = _publish_one_noted

    # When the events of the queue named QW_PROBE_NOTE_QUEUE were read by the follower thread
    # (``read:<queue>``) and applied by the loop (``applied:<queue>``).
    _noted_queue = os.environ.get("QW_PROBE_NOTE_QUEUE")
    if _noted_queue:
        from queues.redis import events as redis_events

        _orig_read = redis_events.EventsFollower.read

        def _read_noted(self, *a, **kw):
            t = time.time()
            events, gaps = _orig_read(self, *a, **kw)
            if any(e.queue.name == _noted_queue for e in events):
                with _lock:
                    _timeline.append((f"read:{_noted_queue}", t, time.time()))
            return events, gaps

        redis_events.EventsFollower.read = _read_noted
        _orig_apply = tracking.CountTracker.apply_events

        def _apply_noted(self, events, *a, **kw):
            t = time.time()
            out = _orig_apply(self, events, *a, **kw)
            if any(e.queue.name == _noted_queue for e in events):
                with _lock:
                    _timeline.append((f"applied:{_noted_queue}", t, time.time()))
            return out

        tracking.CountTracker.apply_events = _apply_noted

_last_extend = [None]
_orig_extend = leader.LeaderLock.extend


def _extend(self, *a, **kw):
    now = time.perf_counter()
    if _last_extend[0] is not None:
        record("loop_gap", now - _last_extend[0])
    t = time.perf_counter()
    ok = _orig_extend(self, *a, **kw)
    record("lock_extend", time.perf_counter() - t)
    if not ok:
        record("lock_lost", 0.0)
    _last_extend[0] = time.perf_counter()
    return ok


leader.LeaderLock.extend = _extend

_orig_run_due = cron.Periodic.run_due


def _note_growth(name: str, rss_before_kib: int) -> None:
    grew = (_rss_kib() - rss_before_kib) / 1024
    with _lock:
        _rss_growth[name] = max(grew, _rss_growth.get(name, 0.0))


def _growth_tracked(owner, attr: str) -> None:
    """The loop's work outside the schedule (events, quiet reads), reported as ``job_<attr>``'s
    growth."""
    orig = getattr(owner, attr)

    def wrapper(*args, **kwargs):
        rss = _rss_kib()
        try:
            return orig(*args, **kwargs)
        finally:
            _note_growth(attr, rss)

    setattr(owner, attr, wrapper)


_growth_tracked(M, "take_due_work")
_growth_tracked(M, "serve_watched")


def _timed_job(job) -> None:
    """Each scheduled job's own time, as ``job_<name>`` (the steps above are inside some)."""
    run = job.run
    if getattr(run, "_probed", False):
        return

    def probed():
        t, rss = time.perf_counter(), _rss_kib()
        try:
            return run()
        finally:
            record(f"job_{job.name}", time.perf_counter() - t)
            _note_growth(job.name, rss)

    probed._probed = True
    object.__setattr__(job, "run", probed)


def _run_due(self, *a, **kw):
    for job in self.jobs:
        _timed_job(job)
    now = self.clock()
    late = {j.name: now - j.next_at for j in self.jobs if j.name in ("tick", "snapshot") and now >= j.next_at}
    ran = _orig_run_due(self, *a, **kw)
    for name in ran:
        if name in late:
            record("tick_late", late[name])
    return ran


cron.Periodic.run_due = _run_due


def _commands() -> None:
    for line in sys.stdin:
        if line.strip() == "snap":
            print(json.dumps({"probe": snap()}), flush=True)
        elif line.strip() == "timeline" and _TIMELINE:
            with _lock:
                taken, _timeline[:] = list(_timeline), []
            with open(_TIMELINE, "a") as out:
                for entry in taken:
                    out.write(json.dumps(entry) + "\n")
            print(json.dumps({"timeline": len(taken)}), flush=True)
        elif line.strip() == "heap":
            print(json.dumps({"heap": _heap_figures()}), flush=True)
        elif line.strip() == "memory" and os.environ.get("QW_PROBE_TRACEMALLOC"):
            _write_top_allocations(os.environ["QW_PROBE_TRACEMALLOC"])
            print(json.dumps({"memory": os.environ["QW_PROBE_TRACEMALLOC"]}), flush=True)


def _sample_progress(m, stop: threading.Event) -> None:
    while not stop.wait(0.25):
        progress = getattr(m, "progress", None)
        if progress is not None:
            record("loop_stall", max(0.0, time.monotonic() - progress))


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def _heap_figures() -> dict:
    """Where the RSS beyond the live objects is: what a full collection frees (cyclic garbage the
    monitor's raised thresholds leave for long), then what glibc's ``malloc_trim`` hands back
    (freed memory malloc kept). Run at the end of a window: both change what follows."""
    import ctypes

    figures: dict = {"rss_mib": _rss_kib() / 1024}
    t = time.perf_counter()
    figures["gc_found"] = gc.collect()
    figures["gc_ms"] = (time.perf_counter() - t) * 1000
    figures["rss_after_gc_mib"] = _rss_kib() / 1024
    t = time.perf_counter()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    figures["trim_ms"] = (time.perf_counter() - t) * 1000
    figures["rss_after_trim_mib"] = _rss_kib() / 1024
    return {k: round(v, 1) for k, v in figures.items()}


_rss_peaks: list[dict] = []  # each time the RSS rose 16 MiB above its last peak: what every thread ran
_rss_window = threading.Event()  # set by ``snap``: peaks count from the RSS at that moment


def _sample_rss_peaks(stop: threading.Event) -> None:
    """Every 50 ms: when the RSS rises well above its highest since the last ``snap``, note the innermost frames
    of this package's code on every thread, to say which step makes the monitor's memory peaks."""
    import traceback

    def ours_file(path: str) -> bool:
        return "/dashboard/" in path or "/queues/" in path

    highest = _rss_kib()
    names = {}
    while not stop.wait(0.05):
        rss = _rss_kib()
        if _rss_window.is_set():
            _rss_window.clear()
            highest = rss
        if rss < highest + 16 * 1024:
            continue
        highest = rss
        names.update({t.ident: t.name for t in threading.enumerate()})
        stacks = {}
        for ident, frame in sys._current_frames().items():
            ours = [f for f in traceback.extract_stack(frame) if ours_file(f.filename)]
            if ours:
                stacks[names.get(ident, str(ident))] = " < ".join(f"{f.name}:{f.lineno}" for f in reversed(ours[-6:]))
        with _lock:
            _rss_peaks.append({"rss_mib": round(rss / 1024, 1), "stacks": stacks})


def _write_top_allocations(path: str, top: int = 40, note: str = "") -> None:
    import tracemalloc

    stats = tracemalloc.take_snapshot().statistics("lineno")
    with open(path, "w") as out:
        if note:
            out.write(note + "\n")
        out.write(f"traced: {sum(s.size for s in stats) / 2**20:.1f} MiB in {len(stats)} lines\n")
        for stat in stats[:top]:
            out.write(f"{stat}\n")


def _trace_health_store(path: str) -> None:
    """Under tracemalloc, the top allocations when a health report is committed (the end of a
    run), with the most traced during the run: the monitor's memory peak was a health run."""
    import tracemalloc

    from dashboard.health import checks as health_checks

    run_all, commit = health_checks.run_all, health_checks.StoredReport.commit

    def traced_run(*args, **kwargs):
        tracemalloc.reset_peak()
        return run_all(*args, **kwargs)

    def traced_commit(self, report):
        current, peak = tracemalloc.get_traced_memory()
        _write_top_allocations(path, note=f"during the run: {peak / 2**20:.1f} MiB at most, now {current / 2**20:.1f}")
        return commit(self, report)

    health_checks.run_all = traced_run
    health_checks.StoredReport.commit = traced_commit


def main() -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=_commands, name="probe-commands", daemon=True).start()
    gc.callbacks.append(_time_gc)
    tune_for_the_monitor()  # as manage.py monitor does
    memory_to = os.environ.get("QW_PROBE_TRACEMALLOC")
    if memory_to:
        import tracemalloc

        tracemalloc.start()
        _trace_health_store(memory_to + ".health")
    m = mon.Monitor(name="monitor", lock_ttl_ms=5000)
    threading.Thread(target=_sample_progress, args=(m, stop), name="probe-progress", daemon=True).start()
    threading.Thread(target=_sample_rss_peaks, args=(stop,), name="probe-rss", daemon=True).start()
    profile_to = os.environ.get("QW_PROBE_CPROFILE")
    if not profile_to:
        m.run(stop)
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        m.run(stop)
    finally:
        profiler.disable()
        profiler.dump_stats(profile_to)


if __name__ == "__main__":
    main()
