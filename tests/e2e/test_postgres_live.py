"""In real Chromium, through the shipped web server and ``manage.py monitor`` processes: a queue of
BullMQ's PostgreSQL backend, beside a Redis connection, is followed live like a Redis one. A job
a real Node worker fails on PostgreSQL appears in the open failed list and its tab's count
without a reload (the monitor's LISTEN follower, one server-side reader); the overview lists the
queue beside the Redis connection's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.browser import LiveApp, log_in, manage
from tests.support.servers import ROOT, AppServer, run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node, pytest.mark.postgres, pytest.mark.xdist_group("postgres-live")]


@pytest.fixture(scope="module")
def pg_app(tmp_path_factory, redis_databases, postgres_server):
    url = postgres_server.create_database("e2e_pg_live")
    seeded = run_node("pg_actions.mjs", "seed", url, "pg-orders")  # migrates the schema, one failed job
    folder = tmp_path_factory.mktemp("pg-live")
    with redis_databases.lease() as redis_db:  # the dashboard's own Redis (and an empty Redis connection)
        env = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"
            },
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_SECRET_KEY": "pg-live-" + "x" * 40,
            "QUEUEWATCH_REDIS_URL": redis_db.url,
            "QUEUEWATCH_CONNECTIONS": "pg",
            "QUEUEWATCH_URL_PG": url,
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
            "QUEUEWATCH_MONITOR_TICK_MS": "1000",
            "QUEUEWATCH_INSECURE_DEV": "1",
        }
        manage(env, "migrate", "-v0")
        username, password = manage(env, "demo_user", "--username", "pglive").split(" / ")
        with open(folder / "monitor.log", "w") as log:
            monitor = subprocess.Popen(
                [sys.executable, "manage.py", "monitor"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
            web = AppServer(env)
            try:
                yield LiveApp(web.url, username, password, env), url, seeded
            finally:
                web.stop()
                monitor.terminate()
                try:
                    monitor.wait(10)
                except subprocess.TimeoutExpired:
                    monitor.kill()
                    monitor.wait(10)


def test_a_job_failed_on_postgres_appears_live_in_its_open_failed_list(browser, pg_app):
    app, url, seeded = pg_app
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        log_in(page, app)
        # The overview lists the PostgreSQL queue once the monitor has discovered it.
        page.wait_for_selector("text=pg-orders", timeout=30_000)
        page.goto(app.url + "/q/pg/bullmq/pg-orders/?state=failed")
        page.wait_for_selector("#live-status[data-state=live]")
        page.evaluate("window.__noReload = 1")
        page.wait_for_selector(f'table.jobs tr[data-job-id="{seeded["failed"]}"]')
        assert page.locator("nav.tabs a.state-failed .count").inner_text() == "1"

        again = run_node("pg_actions.mjs", "seed", url, "pg-orders")  # a Node worker fails one more
        page.wait_for_selector(f'table.jobs tr[data-job-id="{again["failed"]}"]')
        page.wait_for_function("document.querySelector('nav.tabs a.state-failed .count').textContent === '2'")
        assert page.evaluate("window.__noReload") == 1  # live, not a reload
    finally:
        context.close()
