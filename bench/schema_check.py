"""What checking job data against a queue's JSON Schema costs now that it runs in a separate
process (``queues.schema_worker``), against checking it in this process as before.

    .venv/bin/python bench/schema_check.py [--jobs 20000] [--chunk 200]

A typical schema (an object with a dozen typed, required properties, a pattern and an array of
objects) and JOBS small data documents. Prints the start of a checking process, one job checked
at a time (add, duplicate, a single edit: one round trip each) and a bulk edit's chunks of CHUNK
jobs (one round trip per chunk), in microseconds per job, beside the in-process figure. The
last line is one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from queues import job_schema, schema_worker  # noqa: E402

SCHEMA = {
    "type": "object",
    "required": ["id", "email", "amount", "currency", "lines"],
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "email": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
        "amount": {"type": "number", "minimum": 0},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "note": {"type": "string", "maxLength": 200},
        "lines": {
            "type": "array",
            "maxItems": 50,
            "items": {
                "type": "object",
                "required": ["sku", "qty"],
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
            },
        },
    },
}


def data(i: int) -> dict:
    lines = [{"sku": f"S{i}-{n}", "qty": n + 1} for n in range(3)]
    return {"id": i + 1, "email": f"u{i}@example.com", "amount": i / 3, "currency": "EUR", "lines": lines}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--chunk", type=int, default=200)
    opts = parser.parse_args()
    docs = [data(i) for i in range(opts.jobs)]
    texts = [json.dumps(d) for d in docs]

    t = time.perf_counter()
    assert job_schema.validate(SCHEMA, docs[0]) == []  # starts the checking process
    start_ms = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    for d in docs:
        job_schema.validate_here(SCHEMA, d)
    here_us = (time.perf_counter() - t) / len(docs) * 1e6

    single = docs[: min(len(docs), 2000)]
    t = time.perf_counter()
    for d in single:
        job_schema.validate(SCHEMA, d)
    single_us = (time.perf_counter() - t) / len(single) * 1e6

    t = time.perf_counter()
    for k in range(0, len(texts), opts.chunk):
        assert not any(job_schema.validate_many(SCHEMA, texts[k : k + opts.chunk]))
    chunk_us = (time.perf_counter() - t) / len(texts) * 1e6
    schema_worker.stop_all()

    print(f"checking process start: {start_ms:.0f} ms")
    print(f"in this process (before):        {here_us:7.1f} us/job")
    print(f"checking process, one at a time: {single_us:7.1f} us/job")
    print(f"checking process, {opts.chunk} per call: {chunk_us:7.1f} us/job")
    result = {
        "jobs": opts.jobs,
        "chunk": opts.chunk,
        "start_ms": round(start_ms),
        "in_process_us": round(here_us, 1),
        "single_us": round(single_us, 1),
        "chunk_us": round(chunk_us, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
