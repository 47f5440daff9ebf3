"""The queue page's retry-policy advice section: loaded with htmx, shown like
the health checks (evidence, sample job link, fix), read at most once a minute per queue
whatever the number of views, and behind login. The rules themselves:
tests/queues/test_retry_advice.py."""
# Literal `bull:` keys kept: the dashboard Redis (its advice cache under fixed keys) shares the leased database.

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]


def test_advice_section_with_evidence_sample_link_and_fix_read_once_a_minute(
    live_setup, redis_url, redis_client, logged_in, client
):
    ids = run_node("toolbox.mjs", "add", redis_url, "mail", json.dumps([{"name": "send", "data": {}, "opts": {}}] * 2))[
        "ids"
    ]
    args = ["default", "bull", "mail"]
    page = logged_in.get(reverse("queue", args=args)).content.decode()
    assert f'hx-get="{reverse("queue_advice", args=args)}"' in page

    html = logged_in.get(reverse("queue_advice", args=args)).content.decode()
    article = html[html.index('data-kind="retry.no_attempts"') : html.index("</article>")]
    assert 'data-status="fail"' in article
    assert "2 of 2 sampled jobs have no <code>attempts</code>" in article
    assert (
        f'href="{reverse("job", args=[*args, ids[0]])}"' in article
        or f'href="{reverse("job", args=[*args, ids[1]])}"' in article
    )
    assert "exponential" in article  # the fix
    assert 'data-kind="retry.fixed_backoff_herd" data-status="pass"' in html

    # Another view within the minute reads no job: the jobs' removal does not show yet.
    redis_client.delete(*[f"bull:mail:{i}" for i in ids], "bull:mail:wait")
    again = logged_in.get(reverse("queue_advice", args=args)).content.decode()
    assert "2 of 2 sampled jobs have no <code>attempts</code>" in again

    client.logout()
    assert client.get(reverse("queue_advice", args=args)).status_code in (302, 401, 403)
