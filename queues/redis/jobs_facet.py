"""The jobs facet on Redis: job hashes, state lists and sets, read with plain commands."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import redis

from .. import data_search, edit_retry, error_groups, flows, job_add, jobs, listing, retry_advice, selection
from ..errors import JobNotFound
from ..keys import QueueRef
from ..redact import Redactor
from ..text import to_text
from . import data_search as redis_data_search
from . import edit_retry as redis_edit_retry
from . import error_groups as redis_error_groups
from . import export, replies
from . import flows as redis_flows
from . import job_add as redis_job_add
from . import jobs as redis_jobs
from . import listing as redis_listing
from . import retry_advice as redis_retry_advice
from . import selection as redis_selection
from .errors import guarded_iter, redis_errors

EXPORT_WRITERS = {"jsonl": export.iter_jobs_jsonl, "csv": export.iter_jobs_csv}


class RedisJobs:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def page(
        self,
        queue: QueueRef,
        state: str,
        *,
        page: int,
        page_size: int,
        name_filter: str,
        scan_limit: int,
        redactor: Redactor,
    ) -> listing.JobPage:
        with redis_errors(self.connection):
            found = redis_listing.list_jobs(
                self.client,
                queue,
                state,
                page=page,
                page_size=page_size,
                name_filter=name_filter,
                scan_limit=scan_limit,
            )
        found.jobs = [j.redacted(redactor) for j in found.jobs]
        return found

    def first_page(self, queue: QueueRef, state: str, *, size: int) -> tuple[list[str], list[float] | None]:
        with redis_errors(self.connection):
            return redis_listing.page_one_ids(self.client, queue, state, size)

    def summaries(
        self, queue: QueueRef, ids: list[str], scores: list[float] | None = None, *, redactor: Redactor
    ) -> list[jobs.JobSummary]:
        with redis_errors(self.connection):
            return [j.redacted(redactor) for j in redis_jobs.read_summaries(self.client, queue, ids, scores)]

    def detail(self, queue: QueueRef, job_id: str, *, cap: int, redactor: Redactor) -> jobs.JobDetail:
        with redis_errors(self.connection):
            return redis_jobs.read_job(self.client, queue, job_id, cap=cap, redactor=redactor)

    def live_detail(self, queue: QueueRef, job_id: str, *, redactor: Redactor) -> jobs.JobLive | None:
        with redis_errors(self.connection):
            return redis_jobs.read_job_live(self.client, queue, job_id, redactor=redactor)

    def raw_field(self, queue: QueueRef, job_id: str, field: str, *, redactor: Redactor) -> str:
        with redis_errors(self.connection):
            return redis_jobs.read_raw_field(self.client, queue, job_id, field, redactor=redactor)

    def exists(self, queue: QueueRef, job_id: str) -> bool:
        with redis_errors(self.connection):
            return bool(self.client.exists(queue.job_key(job_id)))

    def stored_data(self, queue: QueueRef, job_id: str) -> bytes | None:
        with redis_errors(self.connection):
            return replies.value(self.client.hget(queue.job_key(job_id), "data"))

    def preview(
        self,
        queue: QueueRef,
        *,
        filt: selection.JobFilter,
        before_ms: int,
        sample: int,
        limit: int | None,
        redactor: Redactor,
    ) -> selection.Preview:
        with redis_errors(self.connection):
            found = redis_selection.preview(
                self.client, queue=queue, filt=filt, before_ms=before_ms, sample=sample, limit=limit
            )
        found.sample = [j.redacted(redactor) for j in found.sample]
        return found

    def error_groups(self, queue: QueueRef, *, scan_limit: int, redactor: Redactor) -> error_groups.ErrorGroups:
        with redis_errors(self.connection):
            found = redis_error_groups.error_groups(self.client, queue=queue, scan_limit=scan_limit)
        return found.redacted(redactor)

    def search_data(
        self,
        queue: QueueRef,
        state: str,
        *,
        query: data_search.DataQuery,
        offset: int,
        scan_limit: int,
        data_cap: int,
        redactor: Redactor,
    ) -> data_search.DataSearch:
        with redis_errors(self.connection):
            return redis_data_search.search_data(
                self.client,
                queue,
                state,
                query=query,
                offset=offset,
                scan_limit=scan_limit,
                data_cap=data_cap,
                redactor=redactor,
            )

    def export(
        self, queue: QueueRef, *, fmt: str, filt: selection.JobFilter, before_ms: int, redactor: Redactor
    ) -> Iterator[str]:
        chunks = EXPORT_WRITERS[fmt](self.client, queue=queue, filt=filt, before_ms=before_ms, redactor=redactor)
        return guarded_iter(self.connection, chunks)

    def option_sample(self, queue: QueueRef, *, now_ms: int) -> retry_advice.Sample:
        with redis_errors(self.connection):
            return redis_retry_advice.read_sample(self.client, queue, now_ms=now_ms)

    def edit_plan(self, queue: QueueRef, *, job_id: str, patch: Any, schema: dict | None) -> edit_retry.EditPlan | None:
        with redis_errors(self.connection):
            return redis_edit_retry.plan_edit(self.client, queue=queue, job_id=job_id, patch=patch, schema=schema)

    def duplicate_source(self, queue: QueueRef, *, job_id: str) -> job_add.SourceJob | None:
        with redis_errors(self.connection):
            return redis_job_add.read_source(self.client, queue=queue, job_id=job_id)

    def flow(
        self, queue: QueueRef, job_id: str, *, limits: flows.FlowLimits, from_root: bool, redactor: Redactor
    ) -> flows.FlowTree:
        with redis_errors(self.connection):
            # A queue's own keys (meta, events, ...) are not jobs, whatever an URL names.
            if to_text(self.client.type(queue.job_key(job_id))) != "hash":
                raise JobNotFound(queue.name, job_id)
            return redis_flows.read_flow(
                self.client, queue.job_key(job_id), limits=limits, redactor=redactor, from_root=from_root
            )
