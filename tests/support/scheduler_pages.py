"""Job schedulers made by real Node BullMQ 6.7 in a process of a chosen local zone, and the
scheduler edit form saved as a user would save it (tests/actions/test_scheduler_*)."""

from __future__ import annotations

import html
import json
import re

from django.urls import reverse

from tests.support.servers import run_node

QUEUE = "zoned"
NEW_YORK = {"TZ": "America/New_York"}


def schedule(prefixed, scheduler_id: str, repeat: dict, template: dict | None = None, env=NEW_YORK) -> dict:
    """Node's ``upsertJobScheduler`` in a process whose local zone is ``env['TZ']``."""
    return run_node(
        "toolbox.mjs",
        "schedule",
        prefixed.url,
        QUEUE,
        scheduler_id,
        json.dumps(repeat),
        json.dumps(template or {"name": "report", "data": {"to": "ops"}}),
        prefix=prefixed.prefix,
        env=env,
    )


def form_fields(page: str) -> dict:
    """What the edit form posts when saved unchanged (inputs with their values, textareas)."""
    start = page.index('class="edit-scheduler"')
    form = page[start : page.index("</form>", start)]
    fields = {}
    for tag in re.findall(r"<input [^>]*>", form):
        name = re.search(r'name="([^"]+)"', tag)
        if name and 'type="checkbox"' not in tag:
            value = re.search(r'value="([^"]*)"', tag)
            fields[name.group(1)] = html.unescape(value.group(1)) if value else ""
    for name, value in re.findall(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', form, re.S):
        fields[name] = html.unescape(value)
    return fields


def save_unchanged(client, prefixed, scheduler_id: str, **changes):
    args = prefixed.args(QUEUE)
    page = client.get(reverse("scheduler_edit", args=[*args, scheduler_id])).content.decode()
    fields = {**form_fields(page), **changes}
    fields.pop("csrfmiddlewaretoken", None)
    done = client.post(reverse("queue_action", args=[*args, "edit-scheduler"]), fields, HTTP_HX_REQUEST="true")
    assert b'class="action-result ok"' in done.content, done.content
    return page


def score(prefixed, scheduler_id: str) -> int:
    return int(prefixed.client.zscore(prefixed.queue(QUEUE).key("repeat"), scheduler_id))
