"""In real Chromium, through the shipped web server (uvicorn) and the monitor process, with a real
Node BullMQ worker that fails a job on every run: retry the failed job from its page, the job
fails again, and the same page view (no reload) shows it running, then failed with the new
reason and Retry offered again (not Promote), and its second retry runs the job again. The worker
holds each retried run until the test has seen the page show it running, so what the page shows
afterwards can only have come over the websocket."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import queue
import subprocess
import threading

import pytest

from tests.support.browser import log_in, renewed
from tests.support.servers import NODE_DIR, ensure_node_modules

pytestmark = [pytest.mark.e2e, pytest.mark.node]

QUEUE = "e2e-fail-again"
# Generous: on a loaded 2-core machine the monitor's tick can run many seconds late.
LIVE_MS = 45_000


class WorkerLines:
    """The lines a Node worker prints, read by a thread so the test can wait for one."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []  # every line, for a failure message
        self.pending: list[str] = []  # lines not taken by wait_for yet
        self.proc = proc
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.lines.put(line.strip())

    def release(self) -> None:
        """Let the job the worker holds fail (its runs after the first wait for this)."""
        self.proc.stdin.write("GO\n")
        self.proc.stdin.flush()

    def wait_for(self, wanted: str, timeout: float = 45) -> str:
        """The first line starting with ``wanted`` not taken yet (lines of the worker and of its
        adding side may come in either order: the job can run before ``ADDED`` is printed)."""
        while True:
            for i, line in enumerate(self.pending):
                if line.startswith(wanted):
                    return self.pending.pop(i)
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"the worker never printed {wanted!r}; it printed {self.seen}") from None
            self.seen.append(line)
            self.pending.append(line)


def test_retry_a_job_that_fails_again_then_retry_it_again_from_the_same_view(page, live_app, node_fixture_db):
    ensure_node_modules()
    worker = subprocess.Popen(
        ["node", "fail_again_worker.mjs", node_fixture_db.url, QUEUE],
        cwd=NODE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = WorkerLines(worker)
        job_id = lines.wait_for("ADDED ").split()[1]
        lines.wait_for(f"RUN {job_id} 1")
        lines.wait_for(f"FAILED {job_id}")

        log_in(page, live_app)
        page.goto(f"{live_app.url}/q/default/bull/{QUEUE}/jobs/{job_id}")
        page.wait_for_selector("#live-status[data-state=live]")
        page.evaluate("window.__noReload = 1")
        live = page.locator("section.job-live")
        assert "card service down (run 1)" in live.locator("pre.reason").inner_text()

        # First retry: the worker runs the job again and holds it; the page shows it running,
        # with the actions of a running job (no Retry)...
        page.click("#job-actions button.job-retry")
        lines.wait_for(f"RUN {job_id} 2")
        live.locator(".badge.state-active").wait_for(timeout=LIVE_MS)
        page.wait_for_function(
            "() => document.querySelector('#job-actions') && !document.querySelector('#job-actions .job-retry')",
            timeout=LIVE_MS,
        )
        # ...then the job fails again.
        lines.release()
        lines.wait_for(f"FAILED {job_id}")
        # The page follows without a reload: state, failure reason and the actions a failed job
        # has (Retry, not Promote), all from the live swap.
        page.wait_for_function(
            """() => {
                const live = document.querySelector('section.job-live');
                return live && live.querySelector('.badge.state-failed')
                    && (live.querySelector('pre.reason') || {}).textContent.includes('(run 2)');
            }""",
            timeout=LIVE_MS,
        )
        retry = page.locator("#job-actions button.job-retry")
        retry.wait_for(state="visible", timeout=LIVE_MS)
        assert page.locator("#job-actions button.job-promote").count() == 0
        # An older read of the job (a response that crossed the monitor's message on the way)
        # arriving now does not replace what the page shows: each part says when it was read.
        refused = page.evaluate(
            """() => {
                const shown = document.getElementById('job-actions');
                const stale = shown.cloneNode(false);
                stale.setAttribute('data-read-at', String(Number(shown.dataset.readAt) - 1));
                stale.setAttribute('hx-swap-oob', 'true');
                stale.innerHTML = '<p class="stale-read">a running job actions</p>';
                htmx.swap('#action-result', stale.outerHTML, {swapStyle: 'beforeend'});
                return document.querySelector('#job-actions .stale-read') === null
                    && document.querySelector('#job-actions .job-retry') !== null;
            }"""
        )
        assert refused
        assert page.locator("#action-result .action-result.refused").count() == 0

        # Second retry, from the same view: the worker sees the job a third time.
        renewed(page, "#action-result .action-result", retry.click)  # not the first retry's result
        lines.wait_for(f"RUN {job_id} 3")
        lines.release()
        assert page.locator("#action-result .action-result.ok").count() == 1
        assert page.locator("#action-result .action-result.refused").count() == 0
        assert page.evaluate("window.__noReload") == 1
    finally:
        worker.terminate()
        try:
            worker.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
