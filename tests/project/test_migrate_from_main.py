"""``migrate`` upgrades a database made by the previous main (before the feature packages):
tables keep their names, the renumbered alerts migration is recognised as already applied,
and rows written by that version are still there and readable through today's models.

The fixture was created by ``migrate`` on main as of 2026-11-30; the test works on a copy.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from tests.support.servers import ROOT

FIXTURE = ROOT / "tests" / "support" / "fixtures" / "db-from-main-2026-11-30.sqlite3"
NOW = "2026-11-30 12:00:00"


@pytest.fixture
def old_database(tmp_path):
    """A copy of the old database with an audit entry, a channel and a rule using it, written
    the way the old code stored them."""
    path = tmp_path / "queuewatch.sqlite3"
    shutil.copyfile(FIXTURE, path)
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO dashboard_auditentry (at, username, via, action, connection, prefix, queue, job_ids,"
            " selection, reason, affected, outcome, message) VALUES (?, 'ops', 'page', 'retry', 'default', 'bull',"
            " 'orders', '[\"17\"]', '{}', 'bad deploy', 1, 'ok', 'retried')",
            (NOW,),
        )
        db.execute(
            "INSERT INTO alerts_channel (name, kind, config, secret, enabled, last_error, created_at)"
            " VALUES ('ops-mail', 'email', '{\"to\": [\"ops@example.com\"]}', '', 1, '', ?)",
            (NOW,),
        )
        db.execute(
            "INSERT INTO alerts_alertrule (name, kind, enabled, severity, connection, queue_glob, threshold,"
            " window_minutes, min_volume, include_due_delayed, for_seconds, keep_firing_seconds, repeat_minutes,"
            " notify_resolved, created_at, updated_at) VALUES ('orders backlog', 'waiting', 1, 'warning', '',"
            " 'orders', 500, 5, 0, 0, 60, 0, 0, 1, ?, ?)",
            (NOW, NOW),
        )
        db.execute("INSERT INTO alerts_alertrule_channels (alertrule_id, channel_id) VALUES (1, 1)")
    return path


def manage(database, *args: str) -> subprocess.CompletedProcess:
    """``manage.py`` with the production settings module on ``database``, in a clean process
    (no QUEUEWATCH_* or Django variables from the test run leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUEUEWATCH_", "DJANGO_", "DATABASE_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings", QUEUEWATCH_INSECURE_DEV="1", DATABASE_URL=f"sqlite:///{database}"
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_migrate_upgrades_a_database_from_the_previous_main_and_keeps_its_rows(old_database):
    migrated = manage(old_database, "migrate", "--no-input")
    assert migrated.returncode == 0, migrated.stderr

    shown = manage(old_database, "showmigrations", "--plan")
    assert shown.returncode == 0, shown.stderr
    plan = [line for line in shown.stdout.splitlines() if line.strip()]
    assert plan and all(line.startswith("[X]") for line in plan), shown.stdout
    assert "[X]  alerts.0003_rules_and_silences" in plan

    # Today's models read the old rows from the same tables (looked up by app label, so the
    # test does not depend on which module defines them).
    read = manage(
        old_database,
        "shell",
        "--no-imports",
        "-c",
        (
            "from django.apps import apps\n"
            "entry = apps.get_model('dashboard', 'AuditEntry').objects.get()\n"
            "rule = apps.get_model('alerts', 'AlertRule').objects.get()\n"
            "print(entry.reason, entry.job_ids, rule.name, [c.name for c in rule.channels.all()], sep='|')\n"
        ),
    )
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "bad deploy|['17']|orders backlog|['ops-mail']"

    with sqlite3.connect(old_database) as db:
        assert db.execute("SELECT count(*) FROM dashboard_auditentry").fetchone() == (1,)
        assert db.execute("SELECT name FROM alerts_channel").fetchall() == [("ops-mail",)]


def test_models_need_no_migration_that_main_does_not_have(tmp_path):
    """Models and migrations agree, so nothing beyond the tested upgrade path is pending."""
    result = manage(tmp_path / "empty.sqlite3", "makemigrations", "--check", "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
