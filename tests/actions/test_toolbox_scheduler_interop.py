"""Scheduler editing, removal and legacy migration against real Node BullMQ 6.7: our next run
is cron-parser's (DST nights included), an edited scheduler is stored and produces its next job
exactly as Node's own ``upsertJobScheduler`` would, and a migrated legacy repeat keeps firing,
once per slot, as a scheduler. This module runs its own redis-server."""
# Literal `bull:` keys kept: a redis-server of the module's own: whole key sets compared with Node's.

from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from queues import cron, scheduler_edit
from queues.redis import scheduler_edit as redis_scheduler_edit
from queues.redis import scheduler_migration
from tests.support.servers import node_available
from tests.support.toolbox import node, q, r, server  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


# DST nights (spring forward, fall back) in both hemispheres, plus zones without DST.
NIGHTS = {
    "Europe/Paris": ["2027-03-27T23:00:00+00:00", "2027-10-30T23:00:00+00:00"],
    "America/New_York": ["2027-03-14T05:00:00+00:00", "2027-11-07T04:00:00+00:00"],
    "Australia/Sydney": ["2027-04-03T14:00:00+00:00", "2027-10-02T14:00:00+00:00"],
    "UTC": ["2027-03-28T00:00:00+00:00"],
    "Asia/Kolkata": ["2027-03-28T00:00:00+00:00"],
}
PATTERNS = [
    "30 2 * * *",
    "0 2 * * *",
    "0 3 * * *",
    "*/15 * * * *",
    "0 0 * * 0",
    "15 1 * * *",
    "0 */2 * * *",
    "0 30 2 * * *",
    "59 1 * * *",
    "10 * * * *",
    "*/20 1-3 * * *",
    "0 0 1 * *",
    "*/7 * * * * *",
]


def test_next_run_is_cron_parsers_across_dst_nights(server, tmp_path):
    cases = [
        [pattern, tz, ms(start) + minutes * 60_000 + 1234, None]
        for tz, starts in NIGHTS.items()
        for start in starts
        for minutes in range(0, 5 * 60, 11)
        for pattern in PATTERNS
    ]
    cases += [
        ["0 9 * * 1", "Europe/Paris", ms("2027-01-01T00:00:00+00:00"), ms("2027-03-29T00:00:00+00:00")],
        ["30 2 * * *", "Europe/Berlin", ms("2027-01-01T00:00:00+00:00"), ms("2027-03-27T12:00:00+00:00")],
    ]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    expected = node(server, "cron-next", "none", str(tmp_path / "cases.json"))["next"]
    ours = [cron.bullmq_next_millis(pattern=p, tz=tz, now_ms=now, start_ms=start) for p, tz, now, start in cases]
    wrong = [(c, e, o) for c, e, o in zip(cases, expected, ours) if e != o]
    assert not wrong, f"{len(wrong)} of {len(cases)} differ, e.g. {wrong[:3]}"
    assert len(cases) > 2000


def _normalised_opts(raw: str, *, now_fields=("timestamp",)) -> dict:
    opts = json.loads(raw)
    for name in now_fields:
        opts.pop(name, None)
    return opts


@pytest.mark.parametrize(
    "repeat",
    [
        {"pattern": "30 2 * * *", "tz": "Europe/Paris", "startDate": ms("2027-03-27T12:00:00+00:00"), "limit": 5},
        {"pattern": "0 0 9 * * 1-5", "tz": "America/New_York", "endDate": ms("2030-01-01T00:00:00+00:00")},
        {"every": 3_600_000},
    ],
)
def test_an_edited_scheduler_is_what_nodes_upsert_makes(server, r, repeat):
    """Node upserts a scheduler in queue ``node``; we edit the same-shaped scheduler in queue
    ``ours`` (created by Node with another schedule) into the same definition: the scheduler
    hashes and the next jobs are the same, but for the time the call was made."""
    template = {
        "name": "report",
        "data": {"to": "ops"},
        "opts": {"attempts": 3, "backoff": {"type": "fixed", "delay": 500}},
    }
    theirs = node(server, "schedule", "node", "daily", json.dumps(repeat), json.dumps(template))
    node(
        server,
        "schedule",
        "ours",
        "daily",
        json.dumps({"every": 60_000, "tz": "UTC"}),
        json.dumps({"name": "old", "data": {"old": True}}),
    )
    spec = scheduler_edit.check_spec(
        scheduler_id="daily",
        name="report",
        pattern=repeat.get("pattern", ""),
        every=repeat.get("every"),
        tz=repeat.get("tz", ""),
        start_date=repeat.get("startDate"),
        end_date=repeat.get("endDate"),
        limit=repeat.get("limit"),
        data=template["data"],
        opts=template["opts"],
    )
    result = redis_scheduler_edit.edit_scheduler(r, queue=q("ours"), spec=spec)
    assert result.ok, result.message
    node_hash = r.hgetall("bull:node:repeat:daily")
    our_hash = r.hgetall("bull:ours:repeat:daily")
    # The offset is the time of the call within ``every`` (ours keeps the old scheduler's, as
    # Node's upsert over an existing scheduler would).
    node_hash.pop(b"offset", None)
    our_hash.pop(b"offset", None)
    assert {k: (json.loads(v) if k in (b"opts", b"data") else v) for k, v in our_hash.items()} == {
        k: (json.loads(v) if k in (b"opts", b"data") else v) for k, v in node_hash.items()
    }
    if "pattern" in repeat:
        # The next job: same id (so the same time, computed by cron-parser in the new zone).
        assert result.next_job_id == theirs["next"]["id"]
        expected_next = int(theirs["next"]["id"].rsplit(":", 1)[1])
        assert r.zscore("bull:ours:repeat", "daily") == expected_next
        if repeat.get("startDate"):  # the DST date: 02:30 does not exist in Paris that night
            assert expected_next == ms("2027-03-28T01:30:00+00:00")  # 03:30 summer time
    ours_job = r.hgetall(f"bull:ours:{result.next_job_id}")
    node_job = r.hgetall(f"bull:node:{theirs['next']['id']}")
    assert set(ours_job) == set(node_job)
    for field in (b"name", b"data", b"rjk", b"priority"):
        assert ours_job[field] == node_job[field]
    strip = ("timestamp", "delay", "jobId", "prevMillis") if "every" in repeat else ("timestamp", "delay")
    node_opts, our_opts = (
        _normalised_opts(node_job[b"opts"], now_fields=strip),
        _normalised_opts(ours_job[b"opts"], now_fields=strip),
    )
    if "every" in repeat:
        node_opts["repeat"].pop("offset", None)
        our_opts["repeat"].pop("offset", None)
    assert our_opts == node_opts
    # The old iteration is gone and only the new one is pending (an "every" one is due at once).
    pending = r.zrange("bull:ours:delayed", 0, -1) + r.lrange("bull:ours:wait", 0, -1)
    assert pending == [result.next_job_id.encode()]
    # Node reads the edited scheduler back.
    listed = node(server, "schedulers", "ours")["schedulers"]
    assert [s["key"] for s in listed] == ["daily"] and listed[0]["name"] == "report"
    assert listed[0].get("tz") == repeat.get("tz") and listed[0]["template"]["data"] == {"to": "ops"}


def test_edit_refuses_what_node_would_not_schedule_and_changes_nothing(server, r):
    node(server, "schedule", "guard", "hourly", json.dumps({"every": 3_600_000}), json.dumps({"name": "tick"}))
    before = r.hgetall("bull:guard:repeat:hourly")
    for bad in (
        dict(pattern="0 3 * * *", every=5),
        dict(pattern="not cron"),
        dict(pattern="0 3 * * *", tz="Mars/Base"),
        dict(every=0),
        dict(every=1000, limit=0),
        dict(every=1000, opts={"jobId": "x"}),
    ):
        with pytest.raises(scheduler_edit.SchedulerError):
            scheduler_edit.check_spec(scheduler_id="hourly", name="tick", **bad)
    past = scheduler_edit.check_spec(scheduler_id="hourly", name="tick", every=1000, end_date=1000)
    with pytest.raises(scheduler_edit.SchedulerError, match="end date"):
        redis_scheduler_edit.edit_scheduler(r, queue=q("guard"), spec=past)
    gone = scheduler_edit.check_spec(scheduler_id="nope", name="tick", every=1000)
    assert redis_scheduler_edit.edit_scheduler(r, queue=q("guard"), spec=gone).outcome == "not_editable"
    assert not r.exists("bull:guard:repeat:nope") and r.zscore("bull:guard:repeat", "nope") is None
    assert r.hgetall("bull:guard:repeat:hourly") == before


def test_remove_leaves_what_nodes_remove_job_scheduler_leaves(server, r):
    repeat = json.dumps({"every": 3_600_000, "startDate": ms("2030-01-01T00:00:00+00:00")})
    for name in ("node", "ours"):
        node(server, "schedule", name, "hourly", repeat, json.dumps({"name": "tick"}))
        node(server, "schedule", name, "other", json.dumps({"pattern": "0 3 * * *"}), json.dumps({"name": "t"}))
    node(server, "unschedule", "node", "hourly")
    assert redis_scheduler_edit.remove_scheduler(r, queue=q("ours"), scheduler_id="hourly").ok
    assert redis_scheduler_edit.remove_scheduler(r, queue=q("ours"), scheduler_id="hourly").outcome == "missing"
    left = {
        name: sorted(k.replace(f"bull:{name}:", "") for k in node(server, "dump", name)["keys"])
        for name in ("node", "ours")
    }
    assert left["ours"] == left["node"] and "repeat:hourly" not in left["ours"] and "repeat:other" in left["ours"]
    assert [s["key"] for s in node(server, "schedulers", "ours")["schedulers"]] == ["other"]


def _legacy_v5_every(r, queue: str, *, every: int, member: str = "d9c48061d9d20cd7b1bf692d7ceb46ff") -> str:
    """A v5 hashed repeatable (reference §6.2, as 5.81.5 wrote it) with its pending iteration."""
    due = (int(time.time() * 1000) // every + 1) * every
    r.zadd(f"bull:{queue}:repeat", {member: due})
    r.hset(f"bull:{queue}:repeat:{member}", mapping={"name": "legacy-every", "every": str(every)})
    job_id = f"repeat:{member}:{due}"
    r.hset(
        f"bull:{queue}:{job_id}",
        mapping={
            "name": "legacy-every",
            "data": json.dumps({"v": 5}),
            "timestamp": str(due - every),
            "delay": str(every),
            "priority": "0",
            "rjk": member,
            "opts": json.dumps(
                {
                    "attempts": 2,
                    "repeat": {"every": every, "count": 7},
                    "jobId": job_id,
                    "delay": every,
                    "timestamp": due - every,
                    "prevMillis": due,
                    "repeatJobKey": member,
                }
            ),
        },
    )
    r.zadd(f"bull:{queue}:delayed", {job_id: due * 0x1000})
    r.hset(f"bull:{queue}:meta", "opts.maxLenEvents", 10000)
    return member


def test_a_migrated_legacy_repeat_keeps_firing_once_per_slot_as_a_scheduler(server, r):
    member = _legacy_v5_every(r, "mig", every=1000)
    plan = scheduler_migration.plan_migration(r, queue=q("mig"), member=member, scheduler_id="legacy-every")
    assert plan.layout == "v5-hash" and plan.spec.every == 1000 and plan.pending_job_id.startswith(f"repeat:{member}:")
    assert json.loads(plan.spec.data_json) == {"v": 5} and plan.spec.opts == {"attempts": 2}
    result = scheduler_migration.migrate_legacy(r, queue=q("mig"), plan=plan)
    assert result.ok and result.pending_removed == 1, result.message
    assert not r.exists(f"bull:mig:repeat:{member}") and r.zscore("bull:mig:repeat", member) is None
    assert not r.exists(f"bull:mig:{plan.pending_job_id}")
    # The schedule keeps its phase: the first job is due when the legacy one was.
    assert result.next_job_id == f"repeat:legacy-every:{plan.legacy_next}"
    ran = node(server, "run", "mig", "4", "0", "1")
    slots = [int(job_id.rsplit(":", 1)[1]) for job_id in ran["order"]]
    assert all(job_id.startswith("repeat:legacy-every:") for job_id in ran["order"])
    # Once per slot, in the legacy phase (a slow machine may see BullMQ skip a missed slot, never repeat one).
    assert slots[0] == plan.legacy_next and slots == sorted(set(slots))
    assert all((b - a) % 1000 == 0 for a, b in zip(slots, slots[1:]))
    assert all(job["data"] == {"v": 5} and job["opts"]["attempts"] == 2 for job in ran["jobs"].values())
    listed = node(server, "schedulers", "mig")["schedulers"]
    assert [s["key"] for s in listed] == ["legacy-every"] and listed[0]["iterationCount"] >= 5


def test_a_key_shaped_legacy_entry_that_node_throws_on_is_migrated(server, r):
    member = "nightly:nightly-id::Europe/Paris:0 0 3 * * *"
    due = cron.bullmq_next_millis(pattern="0 0 3 * * *", tz="Europe/Paris", now_ms=int(time.time() * 1000))
    r.zadd("bull:keyed:repeat", {member: due})
    r.hset("bull:keyed:meta", "opts.maxLenEvents", 10000)
    pending = f"repeat:0a1b2c:{due}"
    r.hset(
        f"bull:keyed:{pending}",
        mapping={
            "name": "nightly",
            "data": '{"n":1}',
            "rjk": member,
            "priority": "0",
            "timestamp": "1",
            "delay": "0",
            "opts": '{"attempts":1}',
        },
    )
    r.zadd("bull:keyed:delayed", {pending: due * 0x1000})
    assert "Legacy repeatable job metadata" in node(server, "schedulers", "keyed")["error"]
    plan = scheduler_migration.plan_migration(r, queue=q("keyed"), member=member)
    assert plan.layout == "key-shape" and plan.spec.scheduler_id == "nightly-id" and plan.spec.tz == "Europe/Paris"
    assert plan.next_run(now_ms=int(time.time() * 1000)) == due
    assert scheduler_migration.migrate_legacy(r, queue=q("keyed"), plan=plan).ok
    listed = node(server, "schedulers", "keyed")["schedulers"]
    assert [(s["key"], s["pattern"], s["tz"], s["next"]) for s in listed] == [
        ("nightly-id", "0 0 3 * * *", "Europe/Paris", due)
    ]
    assert r.zrange("bull:keyed:delayed", 0, -1) == [f"repeat:nightly-id:{due}".encode()]
    # A second attempt (a double click, a second tab) is refused and changes nothing.
    assert scheduler_migration.migrate_legacy(r, queue=q("keyed"), plan=plan).outcome == "not_legacy"
    with pytest.raises(scheduler_edit.SchedulerError):
        scheduler_migration.plan_migration(r, queue=q("keyed"), member=member)
