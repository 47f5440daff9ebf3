"""How exact the monitor's live figures are under a mixed real-BullMQ workload, what
that costs the monitored Redis, and how fast stalls are found in a 10,000-job fleet.

    .venv/bin/python bench/count_accuracy.py [--queues 50] [--rate 100] [--seconds 60]
                                             [--sample-ms 250] [--reconcile-ms 60000]

What it starts (loopback, free ports, all stopped at the end)
-------------------------------------------------------------
* a MONITORED and a DASHBOARD ``redis-server``; the monitor reaches the monitored one through a
  counting proxy (``benchlib.CountingProxy``), so its commands are counted exactly;
* ``bench/node/truth_workload.mjs run``: real Node BullMQ 6.7, ``--queues`` queues at ``--rate``
  jobs/s, mixed by queue: prioritized jobs, trimmed finished sets (removeOnComplete/removeOnFail
  by count), backoff retries, flows, plain jobs with failures and short delays;
* ``truth_workload.mjs crash``: a worker that takes 40 jobs of one more queue and is SIGKILLed
  (its locks expire 3 s later; nobody recovers them);
* ``manage.py monitor`` with ``QUEUEWATCH_RECONCILE_MS=--reconcile-ms`` (the periodic snapshot),
  so what is exact comes from events and quiet reads, not from that snapshot.

Phases
------
1. ``baseline``: the workload and the sampler only, for the Redis CPU and commands/s without the monitor.
2. ``accuracy``: the monitor running. Every ``--sample-ms`` the sampler reads the truth in ONE
   ``MULTI`` (per queue what ``getJobCounts()`` reads, and the number of active jobs without a
   lock, by a script in the same transaction), then the monitor's state document (what
   ``/metrics`` and the alert rules read; it carries its ``taken_at``). Per state: p50/p95/max of
   the absolute error, the share of samples above the bound max(2, 1 % of the truth), and the
   error episodes (consecutive samples of one queue and state above the bound): how long they last.
   Twice: ``as_seen`` compares each truth sample with the document readable at that moment (so
   the document's age, up to one tick, counts as error: what a scraper sees); ``as_of`` compares
   each document with the truth samples just before and just after its ``taken_at`` (within
   250 ms; per figure the nearer of the two, see ``as_of``): the error of the figures
   themselves. ``as_of_nearest`` (JSON only) pairs it with the one nearest sample instead.
3. ``quiet``: the workload stops; after 3 s every published figure must equal the truth.
4. ``fleet``: a queue with 10,000 active jobs whose 500 tail jobs have no lock (written directly
   into Redis: the monitor only reads ids and locks). Reported: seconds until the published
   stalled-now is 500 (after discovery found the queue), then until it is 1,000 after 500 more
   locks are deleted (lock expiry), and the monitor's commands/s with the fleet in place.

Prints progress on stderr and ONE JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import bisect
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    BENCH_NODE,
    PY,
    ROOT,
    CountingProxy,
    Procs,
    RedisServer,
    code_version,
    commandstats,
    install_time_limit,
    log,
    manage,
    percentile,
    rates,
    read_state,
    run_bench,
)

STATES = ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")
FLEET, FLEET_ACTIVE, FLEET_LOCKLESS = "acc-fleet", 10_000, 500
CRASH_JOBS = 40
# Per queue: wait, active, delayed, prioritized, waiting-children, completed, failed; then the
# number of active jobs without a lock, for every queue, in the same transaction.
LOCKLESS = """
local out = {}
for i, prefix in ipairs(KEYS) do
  local n = 0
  for _, id in ipairs(redis.call('LRANGE', prefix .. 'active', 0, -1)) do
    if redis.call('EXISTS', prefix .. id .. ':lock') == 0 then n = n + 1 end
  end
  out[i] = n
end
return out
"""


def bound(truth: int) -> float:
    return max(2.0, 0.01 * truth)


class Sampler:
    def __init__(self, monitored, dashboard, queues: list[str]):
        self.r, self.dash, self.queues = monitored, dashboard, queues
        self.lockless = self.r.register_script(LOCKLESS)

    def truth(self) -> dict[str, dict[str, int]]:
        pipe = self.r.pipeline(transaction=True)  # one MULTI: every figure of every queue at one instant
        for q in self.queues:
            k = f"bull:{q}:"
            pipe.llen(k + "wait").llen(k + "active").zcard(k + "delayed").zcard(k + "prioritized")
            pipe.zcard(k + "waiting-children").zcard(k + "completed").zcard(k + "failed")
        self.lockless(keys=[f"bull:{q}:" for q in self.queues], client=pipe)
        replies = pipe.execute()
        out = {}
        for i, q in enumerate(self.queues):
            out[q] = dict(zip(STATES, replies[i * 7 : (i + 1) * 7]))
            out[q]["stalled_now"] = replies[-1][i]
        return out

    def published(self) -> tuple[dict | None, dict[str, dict[str, int]]]:
        doc = read_state(self.dash)
        out = {}
        for e in (doc or {}).get("queues", []):
            if e.get("prefix") == "bull":
                out[e["name"]] = {
                    **{s: int(e["counts"].get(s) or 0) for s in STATES},
                    "stalled_now": int(e.get("stalled_now") or 0),
                }
        return doc, out

    def sample(self) -> tuple[float, float | None, dict, dict]:
        truth = self.truth()
        t = time.time()
        doc, pub = self.published()
        return t, (doc or {}).get("taken_at"), truth, pub


def as_of(samples: list[tuple]) -> list[tuple]:
    """Each distinct state document against the truth around its ``taken_at``: the truth samples
    just before and just after it (each within 250 ms), and per queue and figure whichever of the
    two is nearer the published value. The nearest sample alone is not the truth at ``taken_at``:
    the workload adds on a fixed clock, the documents come on a fixed tick, and for seconds at a
    time a queue's burst (a flow's parent and two children finishing within ~20 ms) fell between
    a document and the sample 60-100 ms after it, which read as a document 3 under the truth
    although its figure was the truth at its ``taken_at`` (docs/benchmarks.md). A
    document that lags by less than one sample period therefore reads as exact here; its age is
    what ``as_seen`` measures."""
    docs = {}
    for _, taken, _, pub in samples:
        if taken:
            docs.setdefault(taken, pub)
    times = [s[0] for s in samples]
    out = []
    for taken, pub in sorted(docs.items()):
        at = taken / 1000
        i = bisect.bisect_right(times, at)
        around = [samples[j][2] for j in (i - 1, i) if 0 <= j < len(samples) and abs(times[j] - at) <= 0.25]
        if not around:
            continue
        truth = {
            q: {
                fig: min((t[q][fig] for t in around if q in t), key=lambda v, f=fig, q=q: abs(pub[q][f] - v))
                for fig in pub[q]
            }
            for q in pub
            if any(q in t for t in around)
        }
        out.append((at, taken, truth, pub))
    return out


def as_of_nearest(samples: list[tuple]) -> list[tuple]:
    """Each distinct state document paired with the one truth sample nearest its ``taken_at``
    (the comparison before ``as_of``; kept in the JSON for comparison)."""
    docs = {}
    for _, taken, _, pub in samples:
        if taken:
            docs.setdefault(taken, pub)
    out = []
    for taken, pub in sorted(docs.items()):
        t, _, truth, _ = min(samples, key=lambda s: abs(s[0] - taken / 1000))
        if abs(t - taken / 1000) <= 0.25:
            out.append((taken / 1000, taken, truth, pub))
    return out


def summarise(samples: list[tuple], every_s: float) -> dict:
    """Per state: absolute error percentiles, share above the bound, error episodes (how long
    one queue's figure stays above the bound)."""
    figures = (*STATES, "stalled_now")
    out, doc_ages = {}, [t - taken / 1000 for t, taken, _, _ in samples if taken]
    for fig in figures:
        errors, over, episodes, long_ones = [], 0, [], []
        open_since: dict[str, float] = {}
        worst: dict[str, tuple] = {}  # queue -> the largest error of its open episode, and its truth
        for t, _, truth, pub in samples:
            for q, tv in truth.items():
                if q not in pub:
                    continue
                err = abs(pub[q][fig] - tv[fig])
                errors.append(err)
                if err > bound(tv[fig]):
                    over += 1
                    open_since.setdefault(q, t)
                    worst[q] = max(worst.get(q, (0, 0, 0)), (err, tv[fig], pub[q][fig]))
                elif q in open_since:
                    episodes.append(t - open_since.pop(q))
                    if episodes[-1] > 2.0:
                        long_ones.append((q, round(episodes[-1], 2), *worst[q]))
                    worst.pop(q, None)
        last_t = samples[-1][0] if samples else 0
        episodes += [last_t - s + every_s for s in open_since.values()]  # still open at the end
        out[fig] = {
            "p50": percentile(errors, 50),
            "p95": percentile(errors, 95),
            "max": max(errors, default=None),
            "samples": len(errors),
            "over_bound_pct": round(100 * over / len(errors), 2) if errors else None,
            "episodes": len(episodes),
            "episode_p95_s": round(percentile(episodes, 95), 2) if episodes else 0,
            "episode_max_s": round(max(episodes), 2) if episodes else 0,
            "episodes_over_2s": sum(1 for e in episodes if e > 2.0),
            # Which queues (name, seconds, largest error, truth and published then): a few.
            "episodes_over_2s_where": sorted(long_ones, key=lambda e: -e[1])[:5],
        }
    return {
        "by_state": out,
        "points": len(samples),
        "state_doc_age_s": {
            "p50": round(percentile(doc_ages, 50), 2),
            "p95": round(percentile(doc_ages, 95), 2),
            "max": round(max(doc_ages), 2),
        }
        if doc_ages
        else None,
    }


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="qw-bench-acc-"))
        self.procs = Procs(self.tmp)
        self.servers: list[RedisServer] = []

    def window(self, label: str, seconds: float, sampler: Sampler, *, sample: bool) -> tuple[dict, list]:
        """Sample (or just wait) for ``seconds``; Redis commands/s and CPU, and the monitor's
        own commands/s (exact, through its proxy)."""
        r = self.monitored.client()
        s0, p0, t0 = commandstats(r), self.proxy.snapshot(), time.monotonic()
        samples, every = [], self.args.sample_ms / 1000
        while time.monotonic() - t0 < seconds:
            tick = time.monotonic()
            if sample:
                samples.append(sampler.sample())
            time.sleep(max(0.0, every - (time.monotonic() - tick)))
        dt = time.monotonic() - t0
        _, total, cpu = rates(s0, commandstats(r), dt)
        d = self.proxy.snapshot()
        d.subtract(p0)
        out = {
            "seconds": round(dt, 1),
            "redis_cmds_per_s": round(total, 1),
            "redis_cpu_pct": round(cpu, 1),
            "monitor_cmds_per_s": round(sum(d.values()) / dt, 1),
            "monitor_top_cmds_per_s": {k: round(v / dt, 1) for k, v in d.most_common(8) if v},
        }
        log(f"{label}: Redis {total:.0f} cmds/s, CPU {cpu:.1f}%; monitor {out['monitor_cmds_per_s']} cmds/s")
        return out, samples

    def wait_published(self, sampler: Sampler, test, timeout: float) -> float | None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            _, pub = sampler.published()
            if test(pub):
                return round(time.monotonic() - t0, 2)
            time.sleep(0.05)
        return None

    async def run(self) -> dict:
        a = self.args
        self.monitored, dashboard = (
            RedisServer(self.procs, "redis-monitored"),
            RedisServer(self.procs, "redis-dashboard"),
        )
        self.servers = [self.monitored, dashboard]
        self.proxy = CountingProxy(self.procs, self.monitored.port, "monitor")
        r, dash = self.monitored.client(), dashboard.client()
        workload = self.procs.start(
            "workload",
            [
                "node",
                "truth_workload.mjs",
                "run",
                "--redis",
                self.monitored.url(),
                "--queues",
                str(a.queues),
                "--rate",
                str(a.rate),
            ],
            cwd=BENCH_NODE,
            json_stdout=True,
        )
        queues = workload.expect("ready", 120)["queues"]
        crash = self.procs.start(
            "crash",
            [
                "node",
                "truth_workload.mjs",
                "crash",
                "--redis",
                self.monitored.url(),
                "--name",
                "acc-crash",
                "--jobs",
                str(CRASH_JOBS),
            ],
            cwd=BENCH_NODE,
            json_stdout=True,
        )
        crash.expect("active", 60)
        os.kill(crash.proc.pid, signal.SIGKILL)  # a worker with jobs in hand dies
        log(f"workload: {a.rate} jobs/s over {len(queues)} queues; crashed worker held {CRASH_JOBS} jobs")
        sampler = Sampler(r, dash, [*queues, "acc-crash"])

        baseline, _ = self.window("baseline (no monitor)", a.baseline_seconds, sampler, sample=True)

        env = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"
            },
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_SECRET_KEY": "bench-" + "x" * 40,
            "QUEUEWATCH_REDIS_URL": self.monitored.url(port=self.proxy.port),
            "QUEUEWATCH_DASHBOARD_REDIS_URL": dashboard.url(),
            "QUEUEWATCH_PREFIXES": "bull",
            "DATABASE_URL": f"sqlite:///{self.tmp / 'db.sqlite3'}",
            "PYTHONUNBUFFERED": "1",
            "QUEUEWATCH_RECONCILE_MS": str(a.reconcile_ms),
            "QUEUEWATCH_MONITOR_TICK_MS": str(a.tick_ms),
        }
        manage(env, "migrate", "-v0")
        monitor = self.procs.start("monitor", [PY, "manage.py", "monitor"], env=env, cwd=ROOT)
        waited = self.wait_published(sampler, lambda pub: len(pub) >= len(queues) + 1, 90)
        if waited is None:
            raise RuntimeError("the monitor did not publish every queue:\n" + monitor.tail())
        log(f"monitor published all {len(queues) + 1} queues after {waited} s; warming up {a.warmup} s")
        time.sleep(a.warmup)

        loaded, samples = self.window("accuracy (monitor running)", a.seconds, sampler, sample=True)
        docs = as_of(samples)
        accuracy = {
            "as_seen": summarise(samples, a.sample_ms / 1000),
            "as_of": summarise(docs, a.tick_ms / 1000),
            "as_of_nearest": summarise(as_of_nearest(samples), a.tick_ms / 1000),
        }
        for fig, s in accuracy["as_of"]["by_state"].items():
            log(
                f"  as of {fig:17} p50 {s['p50']} p95 {s['p95']} max {s['max']}; over bound {s['over_bound_pct']}%; "
                f"episodes {s['episodes']} (p95 {s['episode_p95_s']} s, max {s['episode_max_s']} s, "
                f"> 2 s: {s['episodes_over_2s']})"
            )

        workload.proc.terminate()  # stop producing and working: every queue goes quiet
        summary = workload.expect("summary", 15)["summary"]
        self.procs.stop(workload)
        time.sleep(3.0)
        _, _, truth, pub = sampler.sample()
        mismatches = {
            f"{q}.{fig}": (pub.get(q, {}).get(fig), v)
            for q, tv in truth.items()
            for fig, v in tv.items()
            if pub.get(q, {}).get(fig) != v
        }
        log(
            f"quiet for 3 s: {len(mismatches)} published figures differ from the truth "
            f"{dict(list(mismatches.items())[:5])}"
        )

        fleet = self.fleet(r, sampler)
        self.procs.stop(monitor)
        return {
            "bench": "count_accuracy",
            "code": code_version(None),
            "config": {
                "queues": len(queues),
                "jobs_per_s": a.rate,
                "seconds": a.seconds,
                "sample_ms": a.sample_ms,
                "reconcile_ms": a.reconcile_ms,
                "tick_ms": a.tick_ms,
                "kinds": "prioritized, trimmed, backoff, flows, plain (by queue index mod 5)",
                "crashed_worker_jobs": CRASH_JOBS,
                "bound": "max(2, 1% of the true count)",
            },
            "accuracy": accuracy,
            "samples": len(samples),
            "quiet_after_3s": {"mismatches": len(mismatches), "first": dict(list(mismatches.items())[:10])},
            "cost": {
                "baseline": baseline,
                "loaded": loaded,
                "monitor_redis_cpu_pct": round(loaded["redis_cpu_pct"] - baseline["redis_cpu_pct"], 1),
            },
            "fleet": fleet,
            "workload": summary,
        }

    def fleet(self, r, sampler: Sampler) -> dict:
        """10,000 active jobs, the 500 at the tail without a lock (a crashed worker's, oldest)."""
        k = f"bull:{FLEET}:"
        pipe = r.pipeline(transaction=False)
        now = int(time.time() * 1000)
        ids = [str(i) for i in range(1, FLEET_ACTIVE + 1)]  # head first: moveToActive pushes at the head
        for chunk in range(0, FLEET_ACTIVE, 1000):
            pipe.rpush(k + "active", *ids[chunk : chunk + 1000])
        for i in ids:
            pipe.hset(
                k + i,
                mapping={"name": "fleet", "data": "{}", "opts": "{}", "timestamp": now, "processedOn": now, "ats": 1},
            )
            if int(i) <= FLEET_ACTIVE - FLEET_LOCKLESS:
                pipe.set(k + i + ":lock", "token", px=600_000)
        pipe.hset(k + "meta", "opts.maxLenEvents", 10000)
        pipe.execute()
        sampler.queues.append(FLEET)
        found = self.wait_published(sampler, lambda pub: FLEET in pub, 30)
        exact = self.wait_published(sampler, lambda pub: pub.get(FLEET, {}).get("stalled_now") == FLEET_LOCKLESS, 30)
        log(f"fleet: discovered after {found} s, stalled-now = {FLEET_LOCKLESS} {exact} s later")
        time.sleep(2)
        steady, _ = self.window("fleet in place (10,000 active)", 15, sampler, sample=False)
        more = [
            k + str(i) + ":lock"
            for i in range(FLEET_ACTIVE - 2 * FLEET_LOCKLESS + 1, FLEET_ACTIVE - FLEET_LOCKLESS + 1)
        ]
        r.delete(*more)  # 500 more locks expire
        expired = self.wait_published(
            sampler, lambda pub: pub.get(FLEET, {}).get("stalled_now") == 2 * FLEET_LOCKLESS, 30
        )
        log(f"fleet: 500 more locks gone: stalled-now = {2 * FLEET_LOCKLESS} after {expired} s")
        return {
            "active": FLEET_ACTIVE,
            "lockless_at_tail": FLEET_LOCKLESS,
            "discovered_after_s": found,
            "stalled_exact_after_discovery_s": exact,
            "lock_expiry_seen_after_s": expired,
            "monitor_cmds_per_s_with_fleet": steady["monitor_cmds_per_s"],
            "monitor_top_cmds_per_s": steady["monitor_top_cmds_per_s"],
            "redis_cpu_pct_with_fleet": steady["redis_cpu_pct"],
        }

    def cleanup(self) -> None:
        self.procs.stop_all()
        for s in self.servers:
            s.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=50)
    ap.add_argument("--rate", type=int, default=100, help="jobs/s added in total")
    ap.add_argument("--seconds", type=float, default=60, help="the accuracy window")
    ap.add_argument("--baseline-seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--sample-ms", type=int, default=250)
    ap.add_argument("--reconcile-ms", type=int, default=60_000, help="QUEUEWATCH_RECONCILE_MS: the periodic snapshot")
    ap.add_argument(
        "--tick-ms", type=int, default=2000, help="QUEUEWATCH_MONITOR_TICK_MS: how often the state document is written"
    )
    ap.add_argument("--time-limit", type=float, default=600)
    args = ap.parse_args()
    install_time_limit(args.time_limit)
    return run_bench(Bench(args), show_logs_of=lambda name: name in ("monitor", "workload", "crash"))


if __name__ == "__main__":
    sys.exit(main())
