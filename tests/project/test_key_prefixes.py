"""Tests keep their Redis keys apart by a key prefix of their own (the ``redis_prefix`` and
``prefixed_queues`` fixtures: keys built from ``.queue(name)`` or ``.prefix``), not by a whole
database with hand-written ``bull:`` keys: the session has only 15 databases per worker, and a
prefix also works where only database 0 exists (Redis Cluster). See docs/testing.md.

Only the modules below may still write the literal default prefix in a key; each says why in a
``# Literal `bull:` keys kept: …`` comment of its own. A new module builds its keys from its
prefix, or joins this list with its reason."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.import_graph import ROOT

TESTS = ROOT / "tests"
THIS = Path(__file__).resolve()
LITERAL_KEY = re.compile(r"""["']bull:""")  # a string (plain, bytes or f-string) starting with the prefix
REASON_COMMENT = "# Literal `bull:` keys kept: "

MONITOR = "a monitor discovers every queue of its database and keeps unprefixed state"
OWN_SERVER = "a redis-server of its own (server-wide commandstats, settings or key sets)"
NODE_SESSION = "the session's Node-built database (build_fixture.mjs), served by the e2e app and monitor"
KEYSPACE = "asserts over the whole keyspace or discovers across several prefixes"
CLIENT_NAMES = "client names as BullMQ sets them, CLIENT LIST is server-wide"
NO_REDIS = "key strings as data, not written to Redis"

ALLOWED = {
    "tests/live/test_rolling_pass.py": MONITOR,
    "tests/live/test_watch.py": OWN_SERVER,
    "tests/live/test_refresh_chunks.py": OWN_SERVER,
    "tests/live/test_cluster_slot_migration.py": "a Redis Cluster of its own (Node BullMQ's default prefix on it)",
    "tests/actions/test_bulk_tasks.py": MONITOR,
    "tests/actions/test_dead_letter_envelopes.py": MONITOR,
    "tests/live/test_job_page_actions_live.py": MONITOR,
    "tests/actions/test_toolbox_queue_interop.py": OWN_SERVER,
    "tests/actions/test_toolbox_scheduler_interop.py": OWN_SERVER,
    "tests/browse/test_advice_page.py": "the dashboard Redis (advice cache, fixed keys) shares the database",
    "tests/browse/test_pages.py": NODE_SESSION,
    "tests/e2e/test_actions.py": NODE_SESSION,
    "tests/e2e/test_job_tools.py": NODE_SESSION,
    "tests/security/test_dedup_page_bounded.py": OWN_SERVER,
    "tests/e2e/test_forged_posts.py": NODE_SESSION,
    "tests/e2e/test_alerts.py": NODE_SESSION,
    "tests/e2e/test_csp.py": NODE_SESSION,
    "tests/e2e/test_dlq_redrive.py": NODE_SESSION,
    "tests/e2e/test_layout.py": NODE_SESSION,
    "tests/e2e/test_live.py": NODE_SESSION,
    "tests/e2e/test_pages.py": NODE_SESSION,
    "tests/e2e/test_toolbox.py": NODE_SESSION,
    "tests/e2e/test_schedulers.py": NODE_SESSION,
    "tests/e2e/test_queue_page_jobs_first.py": NODE_SESSION,
    "tests/health/test_check_queues.py": OWN_SERVER,
    "tests/health/test_health.py": CLIENT_NAMES + "; " + MONITOR,
    "tests/health/test_monitor_workers.py": OWN_SERVER + "; " + CLIENT_NAMES,
    "tests/i18n/test_queue_messages.py": NO_REDIS,
    "tests/queues/test_figures_unit.py": NO_REDIS,
    "tests/live/test_columns_recipe.py": MONITOR,
    "tests/live/test_overview_rows.py": MONITOR,
    "tests/live/test_flow_counts.py": MONITOR,
    "tests/live/test_live_failover.py": MONITOR,
    "tests/live/test_live_monitor.py": MONITOR,
    "tests/live/test_live_outage.py": OWN_SERVER + "; " + MONITOR,
    "tests/live/test_live_truth.py": MONITOR,
    "tests/queues/test_queues_unit.py": NO_REDIS + "; " + KEYSPACE,
    "tests/queues/test_sources.py": KEYSPACE,
    "tests/queues/test_workers.py": CLIENT_NAMES,
    "tests/security/test_bounded_reads.py": OWN_SERVER,
    "tests/security/test_export_paging.py": OWN_SERVER,
    "tests/security/test_exports_stream.py": OWN_SERVER,
    "tests/security/test_export_backpressure.py": OWN_SERVER,
    "tests/security/test_fuzz.py": MONITOR,
    "tests/security/test_incremental_discovery.py": OWN_SERVER,
    "tests/security/test_no_scan_on_requests.py": OWN_SERVER,
    "tests/security/test_non_finite_and_deep_json.py": MONITOR,
    "tests/security/test_forged_documents.py": OWN_SERVER,
    "tests/security/test_read_only_brake.py": MONITOR + "; " + KEYSPACE,
    "tests/security/test_worst_case_commands.py": OWN_SERVER,
}


def modules_writing_literal_keys() -> dict[str, str]:
    """Each test module (and support module) whose source has the literal ``bull:`` key prefix."""
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path == THIS:
            continue
        source = path.read_text(encoding="utf-8")
        if LITERAL_KEY.search(source):
            found[str(path.relative_to(ROOT))] = source
    return found


def test_only_listed_modules_hand_write_bull_keys():
    unlisted = sorted(set(modules_writing_literal_keys()) - set(ALLOWED))
    assert not unlisted, (
        f"{unlisted} hand-write `bull:` keys: build them from the test's prefix (redis_prefix / "
        "prefixed_queues: .queue(name).key(...)), or list the module here with its reason"
    )


def test_each_listed_module_still_needs_it_and_says_why():
    found = modules_writing_literal_keys()
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"{stale} no longer write `bull:` keys: take them off the list"
    silent = sorted(path for path, source in found.items() if path in ALLOWED and REASON_COMMENT not in source)
    assert not silent, f"{silent} keep `bull:` keys without a {REASON_COMMENT!r} comment saying why"
