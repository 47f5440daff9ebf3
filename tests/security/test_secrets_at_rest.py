"""Webhook signing secrets and header values were plaintext in the database.
They are now Fernet-encrypted with QUEUEWATCH_ENCRYPTION_KEY; deliveries still sign and send the
real values (checked by a real HTTP receiver); keys rotate with MultiFernet and
``manage.py rotate_secrets``; rows from before are encrypted by the data migration."""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client

from dashboard.alerts import sender
from dashboard.alerts.models import Channel
from tests.support.receivers import WebhookReceiver

pytestmark = pytest.mark.django_db
SECRET = "whsec-signing-9a8b7c"
HEADER = "Bearer header-credential-5d4e3f"
OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


def raw_row(pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret, config FROM alerts_channel WHERE id = %s", [pk])
        return " ".join(str(v) for v in cursor.fetchone())


@pytest.fixture
def receiver():
    r = WebhookReceiver().start()
    yield r
    r.stop()


@pytest.fixture
def keyed(settings):
    settings.QUEUEWATCH_ENCRYPTION_KEY = OLD
    return settings


def create_through_the_form(url: str) -> Channel:
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", password="pw"))
    response = admin.post(
        "/alerts/channels/new/",
        {
            "name": "signed",
            "kind": "webhook",
            "enabled": "on",
            "url": url,
            "shape": "queuewatch",
            "timeout_s": "5",
            "content_type": "application/json",
            "headers": f"Authorization: {HEADER}",
            "to": "",
            "secret": SECRET,
        },
    )
    assert response.status_code == 302, response.content.decode()[:1000]
    return Channel.objects.get(name="signed")


def test_secrets_are_encrypted_in_the_database_and_delivered_in_clear(keyed, receiver):
    channel = create_through_the_form(receiver.url)
    stored = raw_row(channel.pk)
    assert SECRET not in stored and HEADER not in stored and "fernet:" in stored
    result = sender.send_test(channel=Channel.objects.get(pk=channel.pk), requested_by="root")
    assert result.ok, result.detail
    got = receiver.received[0]
    assert got.headers["authorization"] == HEADER
    assert (
        got.headers["x-queuewatch-signature"]
        == "sha256=" + hmac.new(SECRET.encode(), got.body, hashlib.sha256).hexdigest()
    )


def test_key_rotation_with_the_old_key_kept_then_dropped(keyed, receiver):
    channel = create_through_the_form(receiver.url)
    before = raw_row(channel.pk)
    keyed.QUEUEWATCH_ENCRYPTION_KEY = f"{NEW},{OLD}"  # new first: encrypts; old still decrypts
    assert Channel.objects.get(pk=channel.pk).secret == SECRET
    call_command("rotate_secrets", stdout=StringIO())
    assert raw_row(channel.pk) != before
    keyed.QUEUEWATCH_ENCRYPTION_KEY = NEW  # the old key is gone: everything still opens
    assert sender.send_test(channel=Channel.objects.get(pk=channel.pk), requested_by="root").ok
    assert receiver.received[-1].headers["authorization"] == HEADER


def test_a_dropped_key_fails_deliveries_clearly_and_keeps_the_stored_value(keyed, receiver):
    channel = create_through_the_form(receiver.url)
    before = raw_row(channel.pk)
    keyed.QUEUEWATCH_ENCRYPTION_KEY = NEW  # dropped OLD without rotating
    loaded = Channel.objects.get(pk=channel.pk)
    result = sender.send_test(channel=loaded, requested_by="root")
    assert not result.ok and not result.will_retry and "decrypt" in result.detail
    assert receiver.received == []
    loaded.save()
    assert raw_row(channel.pk) == before  # nothing lost: adding OLD back recovers it


def test_the_data_migration_encrypts_rows_written_before_it(keyed):
    channel = Channel.objects.create(name="legacy", kind="webhook", config={"url": "https://example.test/"})
    with connection.cursor() as cursor:  # as a row from before this release: plaintext
        cursor.execute(
            "UPDATE alerts_channel SET secret = %s, config = %s WHERE id = %s",
            [SECRET, json.dumps({"url": "https://example.test/", "headers": {"X-Api-Key": HEADER}}), channel.pk],
        )
    assert SECRET in raw_row(channel.pk)
    migration = importlib.import_module("dashboard.alerts.migrations.0005_secrets_encrypted_at_rest")
    migration.encrypt_existing(apps, None)
    stored = raw_row(channel.pk)
    assert SECRET not in stored and HEADER not in stored
    loaded = Channel.objects.get(pk=channel.pk)
    assert loaded.secret == SECRET
    from dashboard.core.crypto import decrypt_values

    assert decrypt_values(loaded.config["headers"]) == {"X-Api-Key": HEADER}


def test_a_webhook_url_is_encrypted_never_rendered_back_and_kept_when_left_empty(keyed, receiver):
    """The URL of a Slack-style hook is its credential: it was stored in plain text and shown
    in the edit form to anyone who could open it."""
    token_url = f"http://127.0.0.1:{receiver.port}/services/T0001/B0002/hook-token-7f6e5d"
    channel = create_through_the_form(token_url)
    assert "hook-token-7f6e5d" not in raw_row(channel.pk)
    admin = Client()
    admin.force_login(User.objects.get(username="root"))
    edit = admin.get(f"/alerts/channels/{channel.pk}/edit/").content.decode()
    assert "hook-token-7f6e5d" not in edit and "/services/" not in edit
    assert f"http://127.0.0.1:{receiver.port}…" in edit  # its origin, so the admin knows which it is
    for page in ("/alerts/channels/", f"/alerts/channels/{channel.pk}/log/"):
        assert "hook-token-7f6e5d" not in admin.get(page).content.decode()
    # Saved with the URL field left empty: the stored URL is kept.
    form = {
        "name": "signed",
        "kind": "webhook",
        "enabled": "on",
        "url": "",
        "shape": "queuewatch",
        "timeout_s": "7",
        "content_type": "application/json",
        "headers": "Authorization: (unchanged)",
        "to": "",
    }
    response = admin.post(f"/alerts/channels/{channel.pk}/edit/", form)
    assert response.status_code == 302, response.content.decode()[:1000]
    assert "hook-token-7f6e5d" not in raw_row(channel.pk)
    assert sender.send_test(channel=Channel.objects.get(pk=channel.pk), requested_by="root").ok
    assert receiver.received[-1].path == "/services/T0001/B0002/hook-token-7f6e5d"
