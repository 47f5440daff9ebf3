"""The jobs and probes facets of ``FullMemorySource`` (``tests/support/memory_backend.py``):
the same signatures and result types as ``queues/redis/jobs_facet.py`` and ``probes_facet.py``,
read from the in-memory store. Parsing reuses the pure helpers of ``queues/`` (summaries,
payloads, filters, fingerprints), so the pages see exactly what a Redis kind would give."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from queues import edit_retry, job_schema
from queues.data_search import MAX_MATCHES, DataQuery, DataSearch
from queues.error_groups import ErrorGroup, ErrorGroups, fingerprint, normalize
from queues.errors import JobNotFound
from queues.flows import FlowLimits, FlowNode, FlowTree, cut
from queues.job_add import SourceJob
from queues.jobs import LOG_TAIL, SUMMARY_FIELDS, JobDetail, JobLive, JobSummary, prepare_payload, summary_from_fields
from queues.keys import QueueRef
from queues.listing import JobPage
from queues.redact import Redactor
from queues.redis.export import CSV_COLUMNS, _csv_cell
from queues.redis.job_add import STORED_TO_OPTION
from queues.retry_advice import Sample, SampledJob
from queues.safe_json import parse_json
from queues.selection import JobFilter, Preview, matches_filter
from queues.stalls import ActiveLists
from tests.support.memory_backend import FINISHED, MemJob, MemQueue, MemStore, translated


class _Facet:
    def __init__(self, *, store: MemStore, connection: str):
        self.store, self.connection = store, connection

    def _queue(self, ref: QueueRef) -> MemQueue:
        self.store.check()
        return self.store.queue(ref) or MemQueue(ref.name)  # a queue that is gone reads as empty

    def _job(self, ref: QueueRef, job_id: str) -> MemJob | None:
        return self._queue(ref).jobs.get(job_id)


def summary(job: MemJob | None, job_id: str) -> JobSummary:
    if job is None:
        return JobSummary(id=job_id, exists=False)
    f = job.fields()
    return summary_from_fields(job.id, [f.get(n) for n in SUMMARY_FIELDS], job.score())


def selected(q: MemQueue, filt: JobFilter, before_ms: int) -> list[MemJob]:
    """The jobs a filter selects, oldest first (finished: by finish time; others: run order)."""
    jobs = q.in_state(filt.state)
    if filt.state in FINISHED:
        jobs = list(reversed(jobs))
        jobs = [
            j
            for j in jobs
            if (j.finished_on or 0) < before_ms
            and (filt.finished_from_ms is None or (j.finished_on or 0) >= filt.finished_from_ms)
            and (filt.finished_to_ms is None or (j.finished_on or 0) <= filt.finished_to_ms)
        ]
    return [j for j in jobs if matches_filter(summary(j, j.id), filt=filt, before_ms=before_ms, reason=j.failed_reason)]


def _json_or_text(raw: str | None, redactor: Redactor) -> Any:
    if not raw:
        return None
    ok, value = parse_json(raw)
    return redactor.value(value) if ok else redactor.text(raw)


def export_record(job: MemJob, redactor: Redactor) -> dict:
    """The record ``queues.redis.export.iter_record_pages`` writes for a job (same keys, same order)."""
    return {
        "id": job.id,
        "name": job.name,
        "timestamp": job.timestamp,
        "processedOn": job.processed_on,
        "finishedOn": job.finished_on,
        "attemptsMade": job.attempts_made,
        "attemptsStarted": job.attempts_started,
        "stalledCounter": job.stalled,
        "failedReason": redactor.text(job.failed_reason),
        "data": _json_or_text(job.data, redactor),
        "opts": _json_or_text(json.dumps(job.opts), redactor),
        "stacktrace": _json_or_text(json.dumps(job.stacktrace), redactor),
        "returnvalue": _json_or_text(job.returnvalue, redactor),
    }


def _csv_line(row: list) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow([_csv_cell(v) for v in row])  # the app's cell rule (formula injection)
    return buf.getvalue()


class MemJobs(_Facet):
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
    ) -> JobPage:
        with translated(self.connection), self.store.lock:
            jobs = self._queue(queue).in_state(state)
            page = max(1, page)
            start = (page - 1) * page_size
            if not name_filter:
                shown = [summary(j, j.id).redacted(redactor) for j in jobs[start : start + page_size]]
                return JobPage(state, shown, len(jobs), page, page_size, has_next=start + page_size < len(jobs))
            scanned = jobs[:scan_limit]
            matches = [summary(j, j.id).redacted(redactor) for j in scanned if name_filter.lower() in j.name.lower()]
            return JobPage(
                state,
                matches[start : start + page_size],
                len(jobs),
                page,
                page_size,
                name_filter=name_filter,
                scanned=len(scanned),
                scan_complete=len(scanned) >= len(jobs),
                has_next=len(matches) > start + page_size,
            )

    def first_page(self, queue: QueueRef, state: str, *, size: int) -> tuple[list[str], list[float] | None]:
        with translated(self.connection), self.store.lock:
            jobs = self._queue(queue).in_state(state)[:size]
            if state in ("waiting", "active"):
                return [j.id for j in jobs], None
            return [j.id for j in jobs], [float(j.score() or 0) for j in jobs]

    def summaries(
        self, queue: QueueRef, ids: list[str], scores: list[float] | None = None, *, redactor: Redactor
    ) -> list[JobSummary]:
        with translated(self.connection), self.store.lock:
            return [summary(self._job(queue, i), i).redacted(redactor) for i in ids]

    def detail(self, queue: QueueRef, job_id: str, *, cap: int, redactor: Redactor) -> JobDetail:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None:
                raise JobNotFound(queue.name, job_id)

            def payload(raw: str | None):
                return prepare_payload(raw or "", cap=cap, redactor=redactor)

            return JobDetail(
                queue=queue,
                id=job_id,
                state=job.state,
                summary=summary(job, job_id).redacted(redactor),
                data=payload(job.data),
                opts=payload(json.dumps(job.opts)),
                returnvalue=payload(job.returnvalue),
                progress=payload(job.progress),
                failed_reason=redactor.text(job.failed_reason),
                stacktrace=[redactor.text(s) for s in job.stacktrace],
                logs=[redactor.text(line) for line in job.logs[-LOG_TAIL:]],
                logs_total=len(job.logs),
                parent="",
            )

    def live_detail(self, queue: QueueRef, job_id: str, *, redactor: Redactor) -> JobLive | None:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None:
                return None
            return JobLive(
                queue=queue,
                id=job_id,
                state=job.state,
                summary=summary(job, job_id).redacted(redactor),
                progress=prepare_payload(job.progress, cap=4096, redactor=redactor),
                logs=[redactor.text(line) for line in job.logs[-50:]],
                logs_total=len(job.logs),
                failed_reason=redactor.text(job.failed_reason or ""),
            )

    def raw_field(self, queue: QueueRef, job_id: str, field: str, *, redactor: Redactor) -> str:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None:
                raise JobNotFound(queue.name, job_id)
            raw = job.fields().get(field, b"").decode()
            ok, value = parse_json(raw)
            return json.dumps(redactor.value(value), ensure_ascii=False) if ok else redactor.text(raw)

    def exists(self, queue: QueueRef, job_id: str) -> bool:
        with translated(self.connection), self.store.lock:
            return self._job(queue, job_id) is not None

    def stored_data(self, queue: QueueRef, job_id: str) -> bytes | None:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            return None if job is None else job.data.encode()

    def preview(
        self,
        queue: QueueRef,
        *,
        filt: JobFilter,
        before_ms: int,
        sample: int,
        limit: int | None,
        redactor: Redactor,
    ) -> Preview:
        with translated(self.connection), self.store.lock:
            jobs = selected(self._queue(queue), filt, before_ms)
            sample_jobs = [summary(j, j.id).redacted(redactor) for j in jobs[:sample]]
            return Preview(count=len(jobs), sample=sample_jobs, scanned=len(jobs))

    def error_groups(self, queue: QueueRef, *, scan_limit: int, redactor: Redactor) -> ErrorGroups:
        with translated(self.connection), self.store.lock:
            failed = self._queue(queue).in_state("failed")  # newest first: the first of a group is its sample
            groups: dict[str, ErrorGroup] = {}
            for job in failed[:scan_limit]:
                fp, at = fingerprint(job.failed_reason), job.finished_on
                g = groups.get(fp)
                if g is None:
                    groups[fp] = ErrorGroup(
                        fp,
                        normalize(job.failed_reason),
                        1,
                        at,
                        at,
                        job.id,
                        "",
                        job.failed_reason.split("\n", 1)[0],
                    )
                    groups[fp].attach_stack(job.stacktrace[-1] if job.stacktrace else "")
                else:
                    g.count += 1
                    g.first_seen_ms = min(x for x in (g.first_seen_ms, at) if x is not None) if at else g.first_seen_ms
            ordered = sorted(groups.values(), key=lambda g: (-g.count, -(g.last_seen_ms or 0)))
            return ErrorGroups(ordered, scanned=min(len(failed), scan_limit), total=len(failed)).redacted(redactor)

    def search_data(
        self,
        queue: QueueRef,
        state: str,
        *,
        query: DataQuery,
        offset: int,
        scan_limit: int,
        data_cap: int,
        redactor: Redactor,
    ) -> DataSearch:
        with translated(self.connection), self.store.lock:
            jobs = self._queue(queue).in_state(state)
            found = DataSearch(state, query, start=offset, examined=offset, in_state=len(jobs))
            for job in jobs[offset : offset + scan_limit]:
                if len(found.matches) >= MAX_MATCHES:
                    break
                found.examined += 1
                if len(job.data.encode()) > data_cap:
                    found.too_large += 1
                    continue
                ok, value = parse_json(job.data)
                if ok and query.matches(redactor.value(value)):
                    found.matches.append(summary(job, job.id).redacted(redactor))
            return found

    def export(
        self, queue: QueueRef, *, fmt: str, filt: JobFilter, before_ms: int, redactor: Redactor
    ) -> Iterator[str]:
        with translated(self.connection), self.store.lock:
            records = [export_record(j, redactor) for j in selected(self._queue(queue), filt, before_ms)]
        if fmt == "jsonl":
            return iter([json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records])
        return iter([_csv_line(list(CSV_COLUMNS)), *(_csv_line([r[c] for c in CSV_COLUMNS]) for r in records)])

    def option_sample(self, queue: QueueRef, *, now_ms: int) -> Sample:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            jobs = [
                SampledJob(j.id, "wait" if state == "waiting" else state, j.name, dict(j.opts), j.attempts_made)
                for state in ("waiting", "completed", "failed")
                for j in q.in_state(state)[:50]
            ]
            failed = q.in_state("failed")
            recent = sum(1 for j in failed if (j.finished_on or 0) >= now_ms - 15 * 60_000)
            return Sample(queue, jobs, recent, len(failed))

    def edit_plan(self, queue: QueueRef, *, job_id: str, patch: Any, schema: dict | None) -> edit_retry.EditPlan | None:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None:
                return None
            ok, before = parse_json(job.data)
            if not ok:
                raise edit_retry.PatchError("The job's stored data is not valid JSON.")
            after = edit_retry.merge_patch(before, patch)
            return edit_retry.EditPlan(
                job_id=job_id,
                state="failed" if job.state == "failed" else "other",
                before_raw=job.data,
                before=before,
                after=after,
                lifo=bool(job.opts.get("lifo")),
                refusals=tuple(job_schema.validate(schema, after)),
            )

    def duplicate_source(self, queue: QueueRef, *, job_id: str) -> SourceJob | None:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None:
                return None
            return SourceJob(
                name=job.name, data_json=job.data, opts={STORED_TO_OPTION.get(k, k): v for k, v in job.opts.items()}
            )

    def flow(
        self, queue: QueueRef, job_id: str, *, limits: FlowLimits, from_root: bool, redactor: Redactor
    ) -> FlowTree:
        # The store keeps no flows: every job is a flow of one.
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None:
                raise JobNotFound(queue.name, job_id)
            key = queue.job_key(job_id)
            node = FlowNode(key=key, id=job_id, state=job.state, name=job.name)
            if job.state == "failed":
                node.failed_reason = cut(redactor.text(job.failed_reason))
            elif job.state == "completed":
                node.return_value = cut(redactor.text(job.returnvalue or ""))
            return FlowTree(root=node, focus=key, limits=limits, nodes_read=1)


class MemProbes(_Facet):
    def active(self, lengths: Mapping[QueueRef, int]) -> ActiveLists:
        with translated(self.connection), self.store.lock:
            return ActiveLists(ids={q: [j.id for j in self._queue(q).in_state("active")] for q in lengths})

    def without_lock(self, jobs: Mapping[QueueRef, list[str]]) -> dict[QueueRef, list[str]]:
        with translated(self.connection), self.store.lock:
            return {
                q: [i for i in ids if (j := self._job(q, i)) is not None and j.state == "active" and not j.locked]
                for q, ids in jobs.items()
            }

    def job_fields(self, jobs: Sequence[tuple[QueueRef, str]], fields: Sequence[str]) -> list[list[bytes | None]]:
        with translated(self.connection), self.store.lock:
            rows = []
            for q, i in jobs:
                job = self._job(q, i)
                stored = job.fields() if job else {}
                rows.append([stored.get(f) for f in fields])
            return rows

    def finished_counts(
        self, queues: Sequence[QueueRef], *, minutes: Sequence[int], width_ms: int
    ) -> dict[QueueRef, list[tuple[int, int]]]:
        with translated(self.connection), self.store.lock:

            def within(q: QueueRef, state: str, m: int) -> int:
                return sum(1 for j in self._queue(q).in_state(state) if m <= (j.finished_on or 0) < m + width_ms)

            return {q: [(within(q, "completed", m), within(q, "failed", m)) for m in minutes] for q in queues}

    def due_delayed(self, queues: Sequence[QueueRef], *, now_ms: int) -> dict[QueueRef, int]:
        with translated(self.connection), self.store.lock:
            return {q: sum(1 for j in self._queue(q).in_state("delayed") if j.due <= now_ms) for q in queues}
