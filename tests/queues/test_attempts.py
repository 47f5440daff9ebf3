"""Failed attempts that will be retried, told apart from look-alikes (queues.attempts)."""

from queues.attempts import AttemptFailures, is_candidate
from queues.events import Event
from queues.keys import QueueRef
from queues.redis.probes_facet import RedisProbes

Q = QueueRef("default", "bull", "attempts")


def ev(ms, name, job, **fields):
    return Event(Q, f"{ms}-0", name, {"jobId": job, **fields})


def job(r, job_id, **fields):
    r.hset(Q.job_key(job_id), mapping={"name": "x", **{k: str(v) for k, v in fields.items()}})


def resolve(tracker, r, *, settled_only=False):
    return [
        e.job_id for e in tracker.resolve(lambda _: RedisProbes(r, connection="default"), settled_only=settled_only)
    ]


def test_only_retry_shaped_events_of_active_jobs_are_candidates():
    assert is_candidate(ev(1, "waiting", "1", prev="active"), "active")
    assert is_candidate(ev(1, "delayed", "1", delay="9"), "active")
    assert is_candidate(ev(1, "delayed", "1", delay="9"), None)
    assert not is_candidate(ev(1, "delayed", "1", delay="9"), "new")  # added delayed
    assert not is_candidate(ev(1, "delayed", "1", delay="9"), "delayed")  # changeDelay
    assert not is_candidate(ev(1, "waiting", "1", prev="delayed"), "delayed")
    assert not is_candidate(ev(1, "waiting", "1"), "new")


def test_attempts_made_tells_a_retry_from_a_push_back_a_self_delay_and_a_stall(redis_client):
    r, t = redis_client, AttemptFailures()
    job(r, "retry", atm=1, ats=1)  # failed its first attempt: backoff
    job(r, "pushed", atm=0, ats=1)  # rate-limit push-back: the attempt was not used
    job(r, "delayed-itself", atm=1, ats=2)  # moveToDelayed skipAttempt after an earlier failure
    job(r, "stalled", atm=0, ats=1, stc=1)  # stall recovery: `stalled` follows
    t.consider(ev(1, "delayed", "retry", delay="5"), "active")
    t.consider(ev(2, "waiting", "pushed", prev="active"), "active")
    t.consider(ev(3, "delayed", "delayed-itself", delay="5"), "active")
    t.consider(ev(4, "waiting", "stalled", prev="active"), "active")
    assert resolve(t, r, settled_only=True) == ["retry"]  # the last one waits for what follows it
    t.consider(ev(4, "stalled", "stalled"), "waiting")
    assert resolve(t, r) == []
    # A second failed attempt of a known job counts because atm grew; a second push-back not.
    job(r, "retry", atm=2, ats=2)
    t.consider(ev(5, "waiting", "retry", prev="active"), "active")
    t.consider(ev(6, "waiting", "pushed", prev="active"), "active")
    assert resolve(t, r) == ["retry"]


def test_a_vanished_job_is_not_counted(redis_client):
    t = AttemptFailures()
    t.consider(ev(1, "delayed", "gone", delay="5"), "active")
    assert resolve(t, redis_client) == []


def test_a_read_that_lags_behind_several_retries_counts_each_of_them(redis_client):
    r, t = redis_client, AttemptFailures()
    t.consider(ev(1, "added", "j"), None)  # added while followed: no attempt made yet
    t.consider(ev(2, "delayed", "j", delay="5"), "active")
    t.consider(ev(3, "delayed", "j", delay="9"), "active")
    job(r, "j", atm=2, ats=3)  # by the time we read, it failed twice and runs again
    assert resolve(t, r) == ["j", "j"]


def test_a_push_back_read_after_the_job_completed_is_not_counted(redis_client):
    r, t = redis_client, AttemptFailures()
    t.consider(ev(1, "added", "k"), None)
    t.consider(ev(2, "waiting", "k", prev="active"), "active")  # rate-limit push-back
    t.consider(ev(3, "completed", "k", prev="active"), "active")
    job(r, "k", atm=1, ats=2)  # the completion made atm 1
    assert resolve(t, r) == []


def test_a_push_back_read_after_the_job_finished_is_not_an_attempt_failure(redis_client):
    """The read of a push-back can land after the job completed, before its `completed` event
    reaches the monitor: atm then counts the finish, and finishedOn says so."""
    r, t = redis_client, AttemptFailures()
    t.consider(ev(1, "added", "fast"), None)
    t.consider(ev(2, "waiting", "fast", prev="active"), "active")  # rate-limit push-back
    job(r, "fast", atm=1, ats=2, finishedOn=3)  # re-run and completed before the read
    assert resolve(t, r) == []
    t.consider(ev(4, "added", "slow"), None)
    t.consider(ev(5, "delayed", "slow", delay="5"), "active")  # a real retry...
    job(r, "slow", atm=2, ats=2, finishedOn=6)  # ...then completed, before the read
    assert resolve(t, r) == ["slow"]
