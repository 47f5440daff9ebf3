"""An admin-set JSON Schema must not let anyone pin a web process's CPU: a schema whose
references multiply (nested ``allOf``/``$ref``) is refused when it is saved, saying why; data
that takes too long to check against an accepted schema is refused with a clear message once
its time is up, nothing is written, and the web process (with everything it started) is idle
again right after; ``uniqueItems`` over tens of thousands of objects gets its right answer
rather than minutes of pairwise comparisons (the client gives up after a minute).

The time bound is checked through the ASGI server users run (``AppServer``), measuring the CPU
time of its process and its children in /proc over the second after the answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.urls import reverse

from dashboard.actions.bulk_runner import plan_for
from dashboard.actions.models import BulkTask, QueueSchema
from queues.bulk import MemoryStore
from queues.messages import from_data
from queues.redis.bulk import run_bulk
from tests.support.accounts import token_for, user_with
from tests.support.seeding import seed_failed
from tests.support.servers import ROOT, AppServer

pytestmark = pytest.mark.django_db

TICKS = os.sysconf("SC_CLK_TCK")


def bomb(levels: int = 22) -> dict:
    """A schema of about 2 KB that checks every value 2**levels times."""
    defs = {f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i + 1}"}, {"$ref": f"#/$defs/a{i + 1}"}]} for i in range(levels)}
    return {"$defs": {**defs, f"a{levels}": {"type": "integer"}}, "$ref": "#/$defs/a0"}


def costly_items() -> dict:
    """Passes the save-time bound (a few hundred checks per value), but an array of 200,000
    values under it is minutes of work."""
    defs = {
        f"b{i}": {"anyOf": [{"type": "string", "minLength": 3}] * 9 + [{"$ref": f"#/$defs/b{i + 1}"}]} for i in range(3)
    }
    defs["b3"] = {"anyOf": [{"type": "string", "minLength": 3}] * 10 + [{"type": "integer"}]}
    return {
        "$defs": defs,
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"allOf": [{"$ref": "#/$defs/b0"}] * 20}}},
    }


def tree_cpu_s(pid: int) -> float:
    """CPU time (user + system) of ``pid`` and its living descendants, from /proc."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def idle_second_within(pid: int, *, seconds: int, cpu_s: float) -> bool:
    """Whether, in one of the next ``seconds`` one-second windows, ``pid`` and its descendants
    use less than ``cpu_s`` of CPU."""
    before = tree_cpu_s(pid)
    for _ in range(seconds):
        time.sleep(1.0)
        now = tree_cpu_s(pid)
        if now - before < cpu_s:
            return True
        before = now
    return False


def post(url: str, body: dict, token: str, *, timeout: float = 60) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def manage(env: dict, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def web(redis_prefix, tmp_path):
    redis_prefix.client.hset(redis_prefix.queue("guarded").key("meta"), "opts.maxLenEvents", 10000)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "schema-cost-" + "x" * 40,
        "QUEUEWATCH_REDIS_URL": redis_prefix.url,
        "QUEUEWATCH_PREFIXES": redis_prefix.prefix,
        "QUEUEWATCH_DASHBOARD_REDIS_URL": redis_prefix.url,
        "QUEUEWATCH_SHARED_DASHBOARD_REDIS_OK": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "QUEUEWATCH_INSECURE_DEV": "1",
    }
    manage(env, "migrate", "-v0")
    manage(env, "demo_user", "--username", "boss")
    manage(env, "set_role", "boss", "admin")
    token = manage(env, "api_token", "boss")
    server = AppServer(env, timeout=60)
    try:
        yield server, token, redis_prefix
    finally:
        server.stop()


@pytest.mark.slow
def test_costly_schemas_are_refused_at_save_and_costly_data_in_bounded_time_leaving_the_server_idle(web):
    server, token, r = web
    queue = r.queue("guarded")
    url = server.url + "/api/v1/queues/default/" + queue.prefix + "/guarded"

    status, body = post(url + "/actions/set-schema", {"schema": bomb(), "reason": "try"}, token)
    assert status == 400 and "expands to more than 20000 checks" in body["message"]
    status, body = post(url + "/actions/set-schema", {"schema": costly_items(), "reason": "ok"}, token)
    assert status == 200, body

    status, body = post(url + "/jobs", {"name": "big", "data": {"items": [0] * 200_000}}, token)
    assert status == 400 and "Validation took too long (more than 1 s)" in body["message"]
    # A check left running would burn every second after the answer (minutes of CPU). Under a
    # loaded test run the server still spends a little in some second right after (1.2 s of CPU
    # was read in one such window twice in a row, while the same run alone reads ~0), so the
    # process tree must reach an idle second (under 0.25 s of CPU) within five of its answer.
    assert idle_second_within(server.proc.pid, seconds=5, cpu_s=0.25)
    assert r.client.get(queue.key("id")) is None and r.client.llen(queue.key("wait")) == 0  # nothing added

    status, body = post(url + "/jobs", {"name": "small", "data": {"items": [0, 1, 2]}}, token)
    assert status == 201 and r.client.llen(queue.key("wait")) == 1  # the checker is still there for the next

    # uniqueItems over 30,000 objects: the right answer, not minutes of pairwise comparisons
    unique = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    assert post(url + "/actions/set-schema", {"schema": unique, "reason": "rows"}, token)[0] == 200
    rows = [{"id": i, "tags": ["a", i % 7], "price": i / 4} for i in range(30_000)]
    again = {"tags": ["a", 0], "price": 0.0, "id": 0}  # the first row, keys reordered
    status, body = post(url + "/jobs", {"name": "rows", "data": {"rows": [*rows, again]}}, token)
    assert status == 400 and "$.rows: should not repeat items." in body["errors"]
    assert post(url + "/jobs", {"name": "rows", "data": {"rows": rows}}, token)[0] == 201
    mixed = {"rows": [1, True, 0, False, {"a": 1}, {"a": True}]}  # true is not 1 in JSON
    assert post(url + "/jobs", {"name": "rows", "data": mixed}, token)[0] == 201
    assert post(url + "/jobs", {"name": "rows", "data": {"rows": [1, 1.0]}}, token)[0] == 400


def test_a_reference_loop_that_never_goes_down_into_the_data_is_refused_at_save(client, prefixed_queues):
    admin = user_with("admin", username="boss")
    queue = prefixed_queues.queue("guarded")
    prefixed_queues.client.hset(queue.key("meta"), "opts.maxLenEvents", 10000)
    loop = {"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}
    tree = {"$defs": {"n": {"properties": {"kids": {"items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"}
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(admin)}"}
    url = reverse("api_queue_action", args=[*prefixed_queues.args("guarded"), "set-schema"])
    refused = client.post(url, {"schema": json.dumps(loop)}, **headers)
    assert refused.status_code == 400 and "refers back to itself without going down" in refused.json()["message"]
    assert not QueueSchema.objects.exists()
    accepted = client.post(url, {"schema": json.dumps(tree)}, **headers)  # recursion through the data is fine
    assert accepted.status_code == 200 and QueueSchema.objects.get().schema == tree


def test_a_bulk_edit_leaves_a_job_too_costly_to_check_failed_and_edits_the_others(client, prefixed_queues):
    """The bulk path checks a chunk's data in one call to the checking process: the job whose
    patched data takes too long is left failed, with why; the others are edited."""
    admin = user_with("admin", username="boss")
    queue = prefixed_queues.queue("guarded")
    r = prefixed_queues.client
    r.hset(queue.key("meta"), "opts.maxLenEvents", 10000)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(admin)}"}
    args = prefixed_queues.args("guarded")
    set_schema = client.post(
        reverse("api_queue_action", args=[*args, "set-schema"]), {"schema": json.dumps(costly_items())}, **headers
    )
    assert set_schema.status_code == 200
    ids = seed_failed(r, queue, 3, data=lambda i: {"items": [0] * (200_000 if i == 0 else 2)})
    before = r.hget(queue.job_key(ids[0]), "data")
    body = {"action": "edit-retry", "ids": ids, "patch": {"fixed": True}, "reason": "fix", "rate": 0}
    started = client.post(
        reverse("api_bulk_start", args=args), json.dumps(body), content_type="application/json", **headers
    )
    assert started.status_code == 202

    final = run_bulk(r, plan=plan_for(BulkTask.objects.get()), store=MemoryStore())  # what the monitor runs
    assert (final.moved, final.skipped_by) == (2, {"invalid_data": 1})
    assert "Validation took too long" in str(from_data(final.refusals[0]))
    assert r.hget(queue.job_key(ids[0]), "data") == before and r.zscore(queue.key("failed"), ids[0]) is not None
    assert all(json.loads(r.hget(queue.job_key(i), "data"))["fixed"] is True for i in ids[1:])
