"""Runs one bulk plan on a BullMQ-on-PostgreSQL connection to its end, for the crash-safety test
(which SIGKILLs it at random), as ``tests.support.bulk_runner`` does on Redis.

Usage: python -m tests.support.pg_bulk_runner <postgresUrl> <planJson> <progressFile>
The progress is kept in a file, replaced atomically and synced on every save (the store's
contract: durable when ``save`` returns). Prints READY once imports are done, then the final
progress as JSON on its last line."""

import json
import os
import sys

import queues.sources  # noqa: F401  (first: queues.postgres.connection imports it, and it them)
from queues.bulk import BulkPlan, Progress
from queues.postgres.bulk import run_bulk
from queues.postgres.connection import PostgresConnection


class FileStore:
    def __init__(self, path: str):
        self.path = path

    def load(self) -> Progress | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                return Progress.from_dict(json.load(f))
        except FileNotFoundError:
            return None

    def save(self, progress: Progress) -> None:
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(progress.as_dict(), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def main() -> None:
    url, plan_json, path = sys.argv[1:4]
    plan = BulkPlan.from_dict(json.loads(plan_json))
    db = PostgresConnection(url, read_only=False)
    print("READY", flush=True)
    progress = run_bulk(db, plan=plan, store=FileStore(path))
    print(json.dumps(progress.as_dict()), flush=True)


if __name__ == "__main__":
    main()
