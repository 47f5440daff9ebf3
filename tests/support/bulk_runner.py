"""Runs one bulk plan to its end, for the crash-safety test (which SIGKILLs it at random).

Usage: python -m tests.support.bulk_runner <redisUrl> <planJson> <progressKey>
Prints READY once imports are done, then the final progress as JSON on its last line."""

import json
import sys

import redis

from queues.bulk import BulkPlan
from queues.redis.bulk import RedisStore, run_bulk


def main() -> None:
    url, plan_json, key = sys.argv[1:4]
    client = redis.Redis.from_url(url)
    plan = BulkPlan.from_dict(json.loads(plan_json))
    print("READY", flush=True)
    progress = run_bulk(client, plan=plan, store=RedisStore(client, key))
    print(json.dumps(progress.as_dict()), flush=True)


if __name__ == "__main__":
    main()
