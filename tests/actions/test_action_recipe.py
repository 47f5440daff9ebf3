"""docs/recipe-action.md, proved: a new action added through its one home only — a
``registry.register`` call (with its input class and its domain function) made by a fixture,
no template, URL or view edited — is offered on the job page to the users who may take it,
runs from the page (CSRF by the middleware) and from the API (bearer token, or session +
CSRF), is refused by role and in read-only mode, validates its input the same way on both,
and lands in the audit log."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from dashboard.accounts.auth import ADMIN
from dashboard.actions import registry
from dashboard.actions.inputs import ReasonedInput, text
from dashboard.audit.models import AuditEntry
from dashboard.web.errors import InvalidInput
from queues.actions import DONE, ActionResult
from queues.redis.commands_facet import RedisCommands
from queues.sources.facets import commands_of
from tests.support.accounts import token_for, user_with

pytestmark = pytest.mark.django_db

COLOURS = ("red", "green")


# --- the new action: an input class, a domain function, one registration ---------------------


@dataclass(frozen=True)
class FlagInput(ReasonedInput):  # needs a reason, like every destructive action
    colour: str = "red"

    @classmethod
    def fields_from(cls, params) -> dict:
        colour = text(params, "colour") or "red"
        if colour not in COLOURS:
            raise InvalidInput(f"Choose a colour: {', '.join(COLOURS)}.")
        return {"colour": colour}

    def audit_details(self) -> dict:
        return {"colour": self.colour}


def flag_on_redis(commands: RedisCommands, queue, *, job_id: str, colour: str) -> None:
    """The backend operation: a method of the commands facet of each kind that offers it (in
    real life written in queues/redis/commands_facet.py and declared in the facet's protocol)."""
    commands.client.hset(queue.job_key(job_id), "qw:flag", colour)


def flag_job(source, *, queue, job_id: str, given: FlagInput) -> ActionResult:
    """The runner: the validated input to the facet's operation, and the result."""
    commands_of(source).flag(queue, job_id=job_id, colour=given.colour)
    return ActionResult(job_id, DONE, f"Job {job_id} flagged {given.colour}.")


@pytest.fixture
def flag_action(monkeypatch):
    monkeypatch.setattr(RedisCommands, "flag", flag_on_redis, raising=False)
    action = registry.register(
        registry.Action(
            "flag",
            registry.JOB,
            "Flag",
            FlagInput,
            flag_job,
            role=ADMIN,
            offered=lambda where: where.job.state == "waiting",
        )
    )
    yield action
    registry.unregister(registry.JOB, "flag")


# --- a queue with one waiting job (Python bullmq), and users of each role ----------------------


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    """The queue 'recipe' under this test's own key prefix (the app pointed at it): URL arguments."""
    return prefixed_queues.args("recipe")


@pytest.fixture
def job_id(prefixed_queues):
    async def add() -> str:
        from bullmq import Queue

        queue = Queue("recipe", {"connection": prefixed_queues.url, "prefix": prefixed_queues.prefix})
        try:
            return (await queue.add("mail", {"to": "ops"})).id
        finally:
            await queue.close()

    return asyncio.run(add())


def page_post(client: Client, q: list[str], job_id: str, body: dict):
    return client.post(reverse("job_action", args=[*q, "flag", job_id]), body, HTTP_HX_REQUEST="true")


def api_post(client: Client, q: list[str], job_id: str, body: dict, *, token: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post(
        reverse("api_job_action", args=[*q, "flag", job_id]),
        json.dumps(body),
        content_type="application/json",
        **headers,
    )


def csrf_token_of(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


# --- the proof ---------------------------------------------------------------------------------


def test_offered_only_where_and_to_whom_the_registry_says(flag_action, job_id, client, q):
    job_url = reverse("job", args=[*q, job_id])
    flag_url = reverse("job_action", args=[*q, "flag", job_id])
    client.force_login(user_with("operator"))  # may operate, but the action needs admin
    html = client.get(job_url).content.decode()
    assert "job-retry" not in html and "job-discard" in html  # the built-ins, for a waiting job
    assert "job-flag" not in html and flag_url not in html
    client.force_login(user_with("admin"))
    html = client.get(job_url).content.decode()
    form = html[html.index(f'action="{flag_url}"') :]
    form = form[: form.index("</form>")]
    assert 'class="job-flag">Flag</button>' in form and 'name="reason" required' in form
    registry.unregister(registry.JOB, "flag")  # gone from its one home: gone from the page
    try:
        assert "job-flag" not in client.get(job_url).content.decode()
    finally:
        registry.register(flag_action)


def test_posted_from_the_page_with_csrf_and_role_checks(flag_action, job_id, prefixed_queues, q):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user_with("operator"))
    assert page_post(browser, q, job_id, {"reason": "x"}).status_code == 403  # no CSRF token
    token = csrf_token_of(browser.get(reverse("job", args=[*q, job_id])).content.decode())
    assert page_post(browser, q, job_id, {"reason": "x", "csrfmiddlewaretoken": token}).status_code == 403  # role
    browser.force_login(user_with("admin"))
    token = csrf_token_of(browser.get(reverse("job", args=[*q, job_id])).content.decode())
    r = page_post(browser, q, job_id, {"csrfmiddlewaretoken": token})
    assert "Say why" in r.content.decode() and "action-result refused" in r.content.decode()
    r = page_post(browser, q, job_id, {"csrfmiddlewaretoken": token, "reason": "x", "colour": "blue"})
    assert "Choose a colour" in r.content.decode()
    assert (
        not AuditEntry.objects.exclude(queue="").exists()
        and prefixed_queues.client.hget(f"{q[1]}:recipe:{job_id}", "qw:flag") is None
    )

    r = page_post(browser, q, job_id, {"csrfmiddlewaretoken": token, "reason": "looks odd", "colour": "green"})
    assert r.status_code == 200 and "action-result ok" in r.content.decode() and "flagged green" in r.content.decode()
    assert prefixed_queues.client.hget(f"{q[1]}:recipe:{job_id}", "qw:flag") == b"green"
    entry = AuditEntry.objects.exclude(queue="").get()
    assert (entry.action, entry.via, entry.username, entry.reason) == ("job.flag", "page", "user-admin", "looks odd")
    assert (entry.job_ids, entry.selection, entry.outcome, entry.affected) == ([job_id], {"colour": "green"}, "ok", 1)


def test_posted_through_the_api_with_token_session_csrf_and_role_checks(flag_action, job_id, q):
    api = Client(enforce_csrf_checks=True)
    body = {"reason": "api check", "colour": "red"}
    assert api_post(api, q, job_id, body).status_code == 401
    operator, admin = user_with("operator"), user_with("admin")
    r = api_post(api, q, job_id, body, token=token_for(operator))
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "message": "This needs the admin role."}
    api.force_login(admin)
    r = api_post(api, q, job_id, body)  # a session cookie without the CSRF header
    assert r.status_code == 403 and "CSRF" in r.json()["message"]
    token = token_for(admin)
    r = api_post(api, q, job_id, {"colour": "red"}, token=token)
    assert r.status_code == 400 and "Say why" in r.json()["message"]
    r = api_post(api, q, job_id, {**body, "colour": "blue"}, token=token)
    assert r.status_code == 400 and r.json()["error"] == "bad_request" and "Choose a colour" in r.json()["message"]
    assert not AuditEntry.objects.exclude(queue="").exists()  # refusals are queue-less events

    r = api_post(api, q, job_id, body, token=token)
    assert r.status_code == 200 and r.json() == {
        "job_id": job_id,
        "outcome": "done",
        "message": f"Job {job_id} flagged red.",
    }
    entry = AuditEntry.objects.exclude(queue="").get()
    assert (entry.action, entry.via, entry.username, entry.selection) == (
        "job.flag",
        "api",
        "user-admin",
        {"colour": "red"},
    )


def test_read_only_mode_refuses_it_like_every_action(flag_action, job_id, client, settings, q):
    settings.QUEUEWATCH_READ_ONLY = True
    admin = user_with("admin")
    client.force_login(admin)
    assert "job-flag" not in client.get(reverse("job", args=[*q, job_id])).content.decode()
    assert page_post(client, q, job_id, {"reason": "x"}).status_code == 403
    assert api_post(client, q, job_id, {"reason": "x"}, token=token_for(admin)).status_code == 403
    assert not AuditEntry.objects.exclude(queue="").exists()  # refusals are queue-less events


def test_an_unknown_action_is_bad_input_not_a_crash(job_id, client, q):
    client.force_login(user_with("admin"))
    r = page_post(client, q, job_id, {"reason": "x"})  # "flag" is not registered in this test
    assert r.status_code == 200 and "Unknown job action &#x27;flag&#x27;" in r.content.decode()
    r = api_post(client, q, job_id, {"reason": "x"}, token=token_for(User.objects.get(username="user-admin")))
    assert r.status_code == 400 and r.json()["message"].startswith("Unknown job action 'flag'")
