"""API tokens had no expiry, no scopes and no revocation in the UI or the CLI: a token
once leaked worked forever with its user's full role. Now a token's rights are the minimum of its
scopes and its user's role, it can expire, and it can be revoked from the token page or the CLI.
Against the real API and a real Redis (pausing a queue is the act)."""

from __future__ import annotations

import datetime
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.accounts.models import ApiToken
from dashboard.audit.models import AuditEntry

pytestmark = pytest.mark.django_db
QUEUE = "tokens"


@pytest.fixture
def queue(prefixed_queues):
    prefixed_queues.client.hset(meta_key(prefixed_queues), mapping={"opts.maxLenEvents": 10000})
    return prefixed_queues


def meta_key(queue) -> str:
    return queue.queue(QUEUE).key("meta")


def operator(name="op") -> User:
    user = User.objects.create_user(name, password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    return user


def cli(*args) -> str:
    out = StringIO()
    call_command("api_token", *args, stdout=out)
    return out.getvalue().strip()


def pause(queue, token: str):
    url = reverse("api_queue_action", args=[*queue.args(QUEUE), "pause"])
    return Client().post(url, HTTP_AUTHORIZATION=f"Bearer {token}")


def read(queue, token: str):
    return Client().get(reverse("api_queue", args=queue.args(QUEUE)), HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_read_scoped_token_of_an_operator_cannot_act(queue):
    token = cli(operator().username, "--scope", "read")
    assert read(queue, token).status_code == 200
    response = pause(queue, token)
    assert response.status_code == 403
    assert queue.client.hget(meta_key(queue), "paused") is None  # the queue was not paused


def test_scopes_never_exceed_the_users_role(queue):
    viewer = User.objects.create_user("viewer-only", password="pw")
    token = cli(viewer.username, "--scope", "act", "--scope", "admin")
    assert pause(queue, token).status_code == 403
    assert queue.client.hget(meta_key(queue), "paused") is None


def test_an_act_scoped_token_acts_and_a_metrics_only_token_reads_nothing(queue):
    user = operator()
    assert pause(queue, cli(user.username, "--scope", "read", "--scope", "act")).status_code == 200
    assert queue.client.hget(meta_key(queue), "paused") == b"1"
    assert read(queue, cli(user.username, "--scope", "metrics")).status_code == 403


def test_an_expired_token_is_refused(queue):
    token = cli(operator().username, "--expires-in", "1")
    assert read(queue, token).status_code == 200
    ApiToken.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    response = read(queue, token)
    assert response.status_code == 401 and "expired" in response.json()["message"]


def test_revoking_from_the_token_page_stops_the_token_and_is_audited(queue):
    user = operator()
    token = cli(user.username)
    row = ApiToken.objects.get()
    page = Client()
    page.force_login(user)
    assert row.hint in page.get(reverse("tokens")).content.decode()
    # Another (non-admin) user can neither see nor revoke it.
    other = Client()
    other.force_login(operator("other"))
    assert row.hint not in other.get(reverse("tokens")).content.decode()
    assert other.post(reverse("token_revoke", args=[row.pk])).status_code == 403
    assert read(queue, token).status_code == 200
    assert page.post(reverse("token_revoke", args=[row.pk])).status_code == 302
    assert read(queue, token).status_code == 401
    assert AuditEntry.objects.filter(action="token.revoke", username=user.username).exists()
    assert AuditEntry.objects.filter(action="token.issue", via="cli").exists()


def test_the_cli_lists_and_revokes(queue):
    user = operator()
    token = cli(user.username, "--scope", "read")
    listing = cli("--list")
    assert user.username in listing and "read" in listing and "active" in listing
    row = ApiToken.objects.get()
    assert f"revoked {row.pk}" in cli("--revoke", row.hint)
    assert "revoked" in cli("--list", user.username)
    assert read(queue, token).status_code == 401
