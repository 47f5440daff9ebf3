"""A job page's fragments say when the job was read (``data-read-at``), so the page can keep the
later of the monitor's message and an action's own response. A read that shows nothing new keeps
its stamp: the fragments render the same and are not sent again every full tick."""

from __future__ import annotations

import re

import pytest

from dashboard.live import channels as live
from dashboard.monitor.publishing import QueuePublisher, Shown
from dashboard.monitor.tracking import QueueChanges
from queues.jobs import JobLive, JobSummary, Payload
from queues.keys import QueueRef

Q = QueueRef("default", "bull", "orders")


class Recorder:
    """The publisher's interface, keeping what would be sent, deduplicated as it does."""

    def __init__(self):
        self.sent: list[tuple[str, str, str]] = []
        self.last: dict[tuple[str, str], str] = {}

    def publish(self, group, element_id, html, *, force=False):
        if self.last.get((group, element_id)) == str(html):
            return False
        self.last[(group, element_id)] = str(html)
        self.sent.append((group, element_id, str(html)))
        return True


class Jobs:
    def __init__(self):
        self.state = "active"

    def live_detail(self, queue, job_id, *, redactor=None):
        summary = JobSummary(id=job_id, exists=True, name="charge", timestamp=1_700_000_000_000)
        return JobLive(Q, job_id, self.state, summary, Payload("", 0, False, False), [], 0)


def stamps(html: str) -> set[int]:
    return {int(s) for s in re.findall(r'data-read-at="(\d+)"', html)}


@pytest.mark.django_db
def test_a_changed_job_gets_a_new_stamp_and_an_unchanged_one_is_not_sent_again():
    recorder, jobs = Recorder(), Jobs()
    publisher = QueuePublisher(publisher=recorder, redactor=None)
    publisher.shown[Q] = Shown()
    before = live.read_stamp()

    def tick(changed: bool):
        changes = QueueChanges(jobs=frozenset({"7"} if changed else ()), states=frozenset(), moves=[])
        publisher.publish_job(Q, "7", jobs, changes=changes, full=True)

    tick(changed=True)
    operators = [html for group, _e, html in recorder.sent if group == live.job_operators_group(Q, "7")]
    assert len(operators) == 1 and "job-actions" in operators[0] and 'class="job-live"' in operators[0]
    (first,) = stamps(operators[0])  # the live part and the actions: one read, one stamp
    assert first >= before

    sent = len(recorder.sent)
    tick(changed=False)  # a full tick reads the active job again: nothing new, nothing sent
    assert len(recorder.sent) == sent

    jobs.state = "failed"
    tick(changed=True)
    latest = [html for group, _e, html in recorder.sent if group == live.job_group(Q, "7")][-1]
    assert "state-failed" in latest and stamps(latest) and min(stamps(latest)) >= first
