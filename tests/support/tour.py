"""The tour: the pages an operator walks, read by the end-to-end checks that go over every page
(the Arabic reading, the accessibility audit)."""

from __future__ import annotations


def tour(bullmq_fixture) -> list[str]:
    """The pages an operator walks: overview, a queue in each of its states, a failed job and
    its tools, the queue's settings, error groups and deduplication keys, and every page of the navigation."""
    mixed = {
        full_id.split("/", 2)[2]: job
        for full_id, job in bullmq_fixture["jobs"].items()
        if full_id.startswith("bull/mixed/")
    }
    failed = next(i for i, job in mixed.items() if job["failedReason"] and job.get("returnvalue") is None)
    completed = next(i for i, job in mixed.items() if job.get("returnvalue") is not None)
    queue = "/q/default/bull/mixed/"
    return [
        "/",
        *(
            f"{queue}?state={s}"
            for s in ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")
        ),
        f"{queue}jobs/{failed}",
        f"{queue}jobs/{completed}",
        f"{queue}edit/{failed}",
        f"{queue}settings",
        f"{queue}add-job",
        f"{queue}errors/",
        f"{queue}schedulers/",
        f"{queue}deduplication",
        "/q/default/bull/sched/schedulers/",
        "/q/default/bull/sched/schedulers/cron-berlin",
        "/q/default/bull/sched/new-scheduler",
        "/schedulers/",
        "/health/",
        "/tasks/",
        "/searches/",
        "/audit/",
        "/alerts/",
        "/alerts/rules/",
        "/alerts/rules/new",
        "/alerts/silences/",
        "/alerts/channels/",
        "/alerts/channels/new/",
        "/account/tokens/",
    ]
