"""Helpers for tests of the live layer: a monitor run in a thread of the test process, and the
headers a logged-in browser sends when it opens a websocket."""

from __future__ import annotations

import contextlib
import threading

from tests.support.waiting import wait_for


def session_headers(client, user, origin=b"http://localhost"):
    """Log ``user`` in with the Django test ``client``; the websocket headers of that session."""
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return [(b"origin", origin), (b"cookie", cookie), (b"host", b"localhost")]


@contextlib.contextmanager
def monitor_thread(**options):
    """A Monitor (``Monitor(**options)``) running in a daemon thread; stopped cleanly on exit."""
    from dashboard.monitor.loop import Monitor

    stop = threading.Event()
    monitor = Monitor(**options)
    thread = threading.Thread(target=monitor.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield monitor
    finally:
        stop.set()
        thread.join(60)
        # A monitor still running would go on writing history and documents into the tests
        # that come after this one in the same process.
        assert not thread.is_alive(), f"the monitor {monitor.name!r} did not stop within 60 s"


def run_monitor_until(predicate, *, tick=0.3, lock_ttl_ms=2000, name="test-monitor", timeout=20):
    """Run a Monitor in a thread until ``predicate(monitor)`` holds, then stop it cleanly."""
    with monitor_thread(tick=tick, name=name, lock_ttl_ms=lock_ttl_ms) as monitor:
        wait_for(lambda: predicate(monitor), timeout=timeout)
    return monitor


@contextlib.contextmanager
def steady_flows(redis_url: str, name: str, seconds: float):
    """Real Node BullMQ 6.7 adding a flow and a plain job to queue ``name`` every 100 ms for
    ``seconds`` (``tests/node/truth.mjs flowsteady``); yields the process once it has started.
    Its last stdout line is ``{"counts": getJobCounts()}``. Killed on exit if still running."""
    import subprocess

    from tests.support.servers import NODE_DIR, ensure_node_modules

    ensure_node_modules()
    load = subprocess.Popen(
        ["node", "truth.mjs", "flowsteady", redis_url, name, str(seconds)],
        cwd=NODE_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert load.stdout.readline().strip() == "STARTED"
        yield load
    finally:
        if load.poll() is None:
            load.kill()
        load.wait()


def assert_overview_and_api_list(client, user, counts: dict, connection: str) -> None:
    """The overview page shows each queue of ``counts`` (QueueRef -> BullMQ's getJobCounts())
    with its waiting count, and ``GET /api/v1/queues`` (through a token) gives exactly those
    counts, with ``connection`` reachable."""
    from io import StringIO

    from django.core.management import call_command
    from django.urls import reverse

    from queues.keys import QueueRef

    client.force_login(user)
    html = client.get(reverse("overview")).content.decode()
    for queue, queue_counts in counts.items():
        assert f">{queue.name}</a>" in html
        assert f'value="{queue_counts["waiting"]}">' in html
    out = StringIO()
    call_command("api_token", user.username, stdout=out)
    client.logout()
    body = client.get(reverse("api_queues"), HTTP_AUTHORIZATION=f"Bearer {out.getvalue().strip()}").json()
    assert {QueueRef(q["connection"], q["prefix"], q["name"]): q["counts"] for q in body["queues"]} == counts
    assert body["connections"] == [{"name": connection, "ok": True, "error": None}]


def overview_view(client, query: str = "") -> str:
    """The rows view the overview page (as ``client`` sees it) names for its socket: what the
    page's script sends once the socket is open (``{"view": …}``), so the monitor renders those rows."""
    import re

    from django.urls import reverse

    html = client.get(reverse("overview") + query).content.decode()
    found = re.search(r'id="queue-tables" data-rows-view="([0-9a-f]*)"', html)
    assert found and found.group(1), "the overview page names no rows view"
    return found.group(1)
