"""When a waiting job became ready, read from its hash at a constant cost (queues.ready_since)."""

import json

from queues.ready_since import PRIORITY_SHIFT, ReadyTime, WaitingEnds, oldest_ready, ready_time

NOW = 10_000_000


def opts(**o):
    return json.dumps(o).encode()


def test_a_job_that_never_ran_nor_waited_out_a_delay_is_ready_since_its_creation():
    assert ready_time(b"1000", None, opts(attempts=3)) == ReadyTime(1000, True)


def test_a_delayed_job_is_ready_since_its_delay_expired_and_that_is_not_exact():
    # promoteDelayedJobs sets the hash's delay to 0; opts.delay keeps what was asked.
    assert ready_time(b"1000", None, opts(delay=86_400_000)) == ReadyTime(86_401_000, False)


def test_a_job_that_ran_has_no_stored_time_of_its_return_to_waiting():
    assert ready_time(b"1000", b"2000", opts()) == ReadyTime(None, False)
    assert ready_time(b"1000", None, opts(lifo=True)).lifo
    assert ready_time(b"inf", None, b"not json") == ReadyTime(None, False)


def test_a_lpushed_exact_tail_is_the_oldest_of_wait():
    ends = WaitingEnds(
        9, 0, wait_from_tail=(ReadyTime(1000, True), ReadyTime(900, False)), wait_head=ReadyTime(500, False)
    )
    assert oldest_ready(ends, NOW) == (1000, False)


def test_lifo_jobs_at_the_tail_are_passed_over_to_the_first_lpushed_one():
    lifo, fifo = ReadyTime(9000, True, lifo=True), ReadyTime(1000, True)
    assert oldest_ready(WaitingEnds(5, 0, wait_from_tail=(lifo, fifo)), NOW) == (1000, False)
    ran = ReadyTime(None, False)  # a stall-recovered job: back in wait since an unstored time
    assert oldest_ready(WaitingEnds(5, 0, wait_from_tail=(ran, fifo)), NOW) == (1000, True)


def test_without_a_lpushed_job_in_reach_wait_is_a_bound_from_what_was_read():
    lifo = ReadyTime(9000, True, lifo=True)
    ends = WaitingEnds(9, 0, wait_from_tail=(lifo, lifo, lifo), wait_head=ReadyTime(7000, False))
    assert oldest_ready(ends, NOW) == (7000, True)
    assert oldest_ready(WaitingEnds(2, 0, wait_from_tail=(lifo, ReadyTime(8000, True, lifo=True))), NOW) == (
        8000,
        False,
    )


def test_prioritized_is_exact_when_its_ends_share_a_priority():
    first = (ReadyTime(2000, True), 3 * PRIORITY_SHIFT + 1)
    same = (ReadyTime(2500, True), 3 * PRIORITY_SHIFT + 9)
    other = (ReadyTime(1500, True), 7 * PRIORITY_SHIFT + 9)
    assert oldest_ready(WaitingEnds(0, 2, prioritized_first=first, prioritized_last=same), NOW) == (2000, False)
    assert oldest_ready(WaitingEnds(0, 2, prioritized_first=first, prioritized_last=other), NOW) == (1500, True)


def test_a_delay_expiring_ahead_of_now_counts_as_ready_now_and_nothing_waiting_has_no_age():
    ends = WaitingEnds(1, 0, wait_from_tail=(ReadyTime(NOW + 60_000, False),))
    assert oldest_ready(ends, NOW) == (NOW, True)
    assert oldest_ready(WaitingEnds(0, 0), NOW) == (None, False)
