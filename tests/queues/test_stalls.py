"""Stalled-now in fleets of any size (queues.stalls): whole active lists, read in pages."""

from queues.keys import QueueRef
from queues.redis.stalls import read_active, without_lock

Q = QueueRef("default", "bull", "fleet")
OTHER = QueueRef("default", "bull", "small")


def fleet(r, *, live: int, dead: int, queue=Q):
    """``dead`` lock-less jobs at the tail of active (a crashed worker took them first), then
    ``live`` locked ones pushed at the head, as moveToActive does."""
    pipe = r.pipeline(transaction=False)
    for i in range(dead):
        pipe.lpush(queue.key("active"), f"dead-{i}")
    for i in range(live):
        pipe.lpush(queue.key("active"), f"live-{i}")
        pipe.set(queue.job_key(f"live-{i}") + ":lock", "token", px=60_000)
    pipe.execute()


def test_lockless_jobs_at_the_tail_of_a_big_fleet_are_all_found(redis_client):
    r = redis_client
    fleet(r, live=2500, dead=160)
    fleet(r, live=3, dead=1, queue=OTHER)
    lists = read_active(r, {Q: r.llen(Q.key("active")), OTHER: 4}, page=1000)
    assert not lists.partial
    assert len(lists.ids[Q]) == 2660 and lists.ids[Q][0] == "live-2499" and lists.ids[Q][-1] == "dead-0"
    stalled = without_lock(r, lists.ids, page=1000)
    assert sorted(stalled[Q]) == sorted(f"dead-{i}" for i in range(160))
    assert stalled[OTHER] == ["dead-0"]


def test_a_list_beyond_the_budget_is_read_from_its_tail_and_reported_partial(redis_client):
    r = redis_client
    fleet(r, live=900, dead=100)
    lists = read_active(r, {Q: 1000}, budget=250, page=100)
    assert lists.partial == {Q}
    assert len(lists.ids[Q]) == 250 and lists.ids[Q][-1] == "dead-0" and lists.ids[Q][0] == "live-149"
    assert len(without_lock(r, lists.ids, page=100)[Q]) == 100


def test_jobs_pushed_after_the_length_was_read_are_not_lost(redis_client):
    r = redis_client
    fleet(r, live=0, dead=5)
    length = r.llen(Q.key("active"))
    r.lpush(Q.key("active"), "newer")  # a worker took a job meanwhile
    assert read_active(r, {Q: length}, page=2).ids[Q] == ["newer", "dead-4", "dead-3", "dead-2", "dead-1", "dead-0"]
