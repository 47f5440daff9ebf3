"""Two web replicas behind one dashboard Redis and one database, as docs/operations.md
("Several web replicas") describes: two web server processes (uvicorn) of the shipped ASGI app share a SQLite
file and a Redis database (monitored queues, channel layer, leader lock), with two
``manage.py monitor`` processes of which one leads. Pages open on either replica receive the
same live fragments; a bulk task started through one replica's API is seen and cancelled
through the other's pages; one monitor leads throughout."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from dashboard.core import state_store
from tests.support.browser import LiveApp, follow, log_in, manage
from tests.support.servers import ROOT, AppServer, run_node

# One worker starts the four processes once for the module, not once per pytest-xdist worker.
pytestmark = [pytest.mark.e2e, pytest.mark.node, pytest.mark.xdist_group("two-replicas")]

MONITORS = ("monitor-a", "monitor-b")
LEADER_KEY = "queuewatch:monitor:leader"  # queues.redis.leader.LeaderLock's key


class Replicas:
    def __init__(self, a: LiveApp, b: LiveApp, db_path, redis_db, secret_key: str, logs):
        self.a, self.b = a, b
        self.db_path = db_path
        self.redis = redis_db
        self.secret_key = secret_key
        self._logs = logs

    def locked_database_said(self) -> list[str]:
        """Lines where a process said SQLite refused it the shared file (all four write it)."""
        return [line for line in self._logs().splitlines() if "database is locked" in line]


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def replica_env(redis_url: str, db_path) -> dict:
    """What every process of the deployment shares: secret key, Redis, database."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "replicas-" + "x" * 40,
        "QUEUEWATCH_REDIS_URL": redis_url,  # monitored and dashboard Redis: the same database
        "QUEUEWATCH_PREFIXES": "bull",
        "DATABASE_URL": f"sqlite:///{db_path}",
        "QUEUEWATCH_MONITOR_TICK_MS": "1000",
        "QUEUEWATCH_INSECURE_DEV": "1",
    }


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, redis_databases):
    folder = tmp_path_factory.mktemp("replicas")
    db_path = folder / "db.sqlite3"
    with redis_databases.lease() as redis_db:  # a whole database: the monitors own its keyspace
        env = replica_env(redis_db.url, db_path)
        manage(env, "migrate", "-v0")
        username, password = manage(env, "demo_user", "--username", "replicas").split(" / ")
        monitor_logs = [open(folder / f"{name}.log", "w") for name in MONITORS]  # noqa: SIM115
        monitors = [
            subprocess.Popen(
                [sys.executable, "manage.py", "monitor", "--name", name],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
            for name, log in zip(MONITORS, monitor_logs, strict=True)
        ]
        webs: list[AppServer] = []
        try:
            webs.append(AppServer(env))
            webs.append(AppServer(env))
            a, b = (LiveApp(web.url, username, password, env) for web in webs)

            def logs() -> str:
                return "".join(web.said() for web in webs) + "".join(
                    (folder / f"{name}.log").read_text(errors="replace") for name in MONITORS
                )

            yield Replicas(a, b, db_path, redis_db, env["QUEUEWATCH_SECRET_KEY"], logs)
        finally:
            for web in webs:
                web.stop()
            for monitor in monitors:
                _stop(monitor)
            for log in monitor_logs:
                log.close()


def open_live(page, app: LiveApp, path: str) -> None:
    page.goto(app.url + path)
    page.wait_for_selector("#live-status[data-state=live]")
    page.evaluate("window.__noReload = 1")


def api(app: LiveApp, token: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        app.url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.loads(response.read())


def test_a_failed_job_reaches_pages_open_on_both_replicas(browser, replicas):
    url = replicas.redis.url
    run_node("produce.mjs", "complete", url, "replicas-live", "1")  # the queue exists, nothing failed
    pages = []
    try:
        for app in (replicas.a, replicas.b):
            page = browser.new_context(bypass_csp=True).new_page()
            pages.append(page)
            page.set_default_timeout(15_000)
            log_in(page, app)
            open_live(page, app, "/q/default/bull/replicas-live/?state=failed")
            assert page.locator("nav.tabs a.state-failed .count").inner_text() == "0"
        job_id = run_node("produce.mjs", "fail", url, "replicas-live", "1")["ids"][0]
        for page in pages:  # one fragment, rendered once by the leader, fanned out to both
            page.wait_for_selector(f'table.jobs tr[data-job-id="{job_id}"]')
            page.wait_for_function("document.querySelector('nav.tabs a.state-failed .count').textContent === '1'")
            assert page.evaluate("window.__noReload") == 1
        # The same row on both, but for the relative times each page keeps counting itself.
        rows = [
            [cell for cell in p.locator(f'tr[data-job-id="{job_id}"] td').all_inner_texts() if "ago" not in cell]
            for p in pages
        ]
        assert rows[0] == rows[1] and "live failure 0" in rows[0]
    finally:
        for page in pages:
            page.context.close()


def test_a_bulk_task_started_on_one_replica_is_cancelled_on_the_other(page, replicas):
    url = replicas.redis.url
    run_node("produce.mjs", "fail", url, "replicas-bulk", "30")
    token = manage(replicas.a.env, "api_token", replicas.a.username)
    # Paced at 2 jobs a second: 30 jobs take 15 s, long enough to cancel midway.
    started = api(
        replicas.a,
        token,
        "/api/v1/queues/default/bull/replicas-bulk/bulk",
        {"action": "retry", "state": "failed", "rate": 2, "reason": "two replicas"},
    )
    task_id = started["id"]

    log_in(page, replicas.b)
    page.goto(replicas.b.url + "/tasks/")
    # Loaded, htmx included: the cancel form sends its CSRF token through htmx.
    follow(page, page.locator(f'tr.task-row[data-task-id="{task_id}"] a'))
    page.wait_for_selector(".task-progress[data-state=running]", timeout=15_000)
    page.click("button.cancel-task")
    page.wait_for_selector(".task-progress[data-state=cancelled]", timeout=15_000)

    final = api(replicas.b, token, f"/api/v1/tasks/{task_id}")
    assert final["state"] == "cancelled" and final["cancel_requested"]
    assert 0 < final["moved"] < 30  # stopped midway: what moved stays moved
    with sqlite3.connect(replicas.db_path) as db:
        audited = db.execute(
            "SELECT action, via FROM dashboard_auditentry WHERE task_id = ? ORDER BY id", (task_id,)
        ).fetchall()
    assert [a for a, _via in audited].count("bulk.cancel") == 1
    assert ("bulk.cancel", "page") in audited  # requested through replica B's page
    assert len(audited) == 3  # queued (api), cancel requested (page), ended (task): each once
    assert replicas.locked_database_said() == []


def test_one_of_two_monitors_leads(settings, replicas):
    settings.SECRET_KEY = replicas.secret_key  # the state document is signed with the app's key
    client = replicas.redis.client()
    try:
        seen_tokens, seen_names = set(), set()
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:  # a few lock extensions (every ttl/3) and state writes
            assert client.type(LEADER_KEY) == b"string"  # one token, not a set of holders
            seen_tokens.add(client.get(LEADER_KEY))
            state = state_store.read_state(client)
            assert state is not None
            seen_names.add(state["monitor"])
            time.sleep(0.25)
        assert len(seen_tokens) == 1 and None not in seen_tokens
        assert len(seen_names) == 1 and seen_names <= set(MONITORS)
    finally:
        client.close()
