"""A bulk task's progress kept in a Redis (the dashboard Redis, or a test's)."""

from __future__ import annotations

import json

import redis

from ...bulk.progress import (
    Progress,
)


class RedisStore:
    """Progress as one JSON string key (in the dashboard Redis, or a test's)."""

    def __init__(self, client: redis.Redis, key: str):
        self.client, self.key = client, key

    def load(self) -> Progress | None:
        raw = self.client.get(self.key)
        return Progress.from_dict(json.loads(raw)) if raw else None

    def save(self, progress: Progress) -> None:
        self.client.set(self.key, json.dumps(progress.as_dict()))
