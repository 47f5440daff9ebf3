"""One error-groups page or one name-filtered job list cost ~20,000 Redis commands
(one per failed job examined), so a few viewers could keep the monitored Redis busy. Each is now
bounded by ``QUEUEWATCH_SCAN_SAMPLE`` (the newest N jobs, stated on the page), counted here with
the real Redis's own command statistics."""
# Literal `bull:` keys kept: a private redis-server (commandstats count only this test's commands).

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from queues.redis.error_groups import STACK_SAMPLES

pytestmark = pytest.mark.django_db
FAILED = 5000
STATED = 2000  # QUEUEWATCH_SCAN_SAMPLE's documented default (docs/operations.md, "Reading Redis")
ARGS = ["default", "bull", "bigfail"]


@pytest.fixture
def many_failed(private_redis):
    """On a redis-server of this test's own, so commandstats count only this request's commands."""
    client = private_redis
    pipe = client.pipeline(transaction=False)
    pipe.hset("bull:bigfail:meta", mapping={"opts.maxLenEvents": 10000})
    for n in range(FAILED):
        pipe.hset(
            f"bull:bigfail:{n}",
            mapping={
                "name": f"job-{n % 7}",
                "data": "{}",
                "timestamp": n,
                "finishedOn": n,
                "failedReason": f"boom {n % 300} at 10.0.0.{n % 9}:5432",
            },
        )
        pipe.zadd("bull:bigfail:failed", {str(n): n})
    pipe.execute()
    return client


def commands_during(redis_client, call) -> int:
    redis_client.config_resetstat()
    response = call()
    stats = redis_client.info("commandstats")
    return response, sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_info", "cmdstat_config|resetstat"))


def test_error_groups_page_reads_a_bounded_sample(many_failed, logged_in):
    response, used = commands_during(many_failed, lambda: logged_in.get(reverse("queue_errors", args=ARGS)))
    assert response.status_code == 200
    assert used <= STATED + STACK_SAMPLES + 100, used  # ~100: the page's own few reads
    assert f"newest {STATED} of {FAILED}" in response.content.decode()


def test_name_filtered_list_reads_a_bounded_sample(many_failed, logged_in):
    url = reverse("queue", args=ARGS) + "?state=failed&name=no-such-name"
    response, used = commands_during(many_failed, lambda: logged_in.get(url))
    assert response.status_code == 200
    assert used <= STATED + 100, used
    text = re.sub(r"<[^>]+>", "", response.content.decode())  # counts are <data> the browser formats
    assert f"the first {STATED:,} of {FAILED:,}" in text
