"""One form style on every alerting form (templates/alerts/_field.html): a label above each
input, help text and errors beside the field and linked to it, and nothing red on a form nobody
has sent yet (the maintenance window's cron preview included)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

FIELD = re.compile(r'<div class="field[^"]*" id="field-(\w+)">\s*<label for="(id_\w+)">', re.S)


@pytest.fixture
def admin_client():
    user = User.objects.create_user("form-admin", password="x")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url_name", ["alert_rule_new", "silences", "channel_new"])
def test_untouched_forms_have_labels_above_inputs_and_no_errors(admin_client, url_name):
    html = admin_client.get(reverse(url_name)).content.decode()
    fields = FIELD.findall(html)
    assert len(fields) >= 3, html  # every field goes through the one partial
    for name, input_id in fields:
        assert re.search(rf'id="{input_id}"', html), name  # the label points at a real input
    assert "has-error" not in html and "field-error" not in html and 'role="alert"' not in html


def test_the_untouched_cron_preview_gives_a_hint_not_an_error(admin_client):
    empty = admin_client.get(reverse("cron_preview"), {"cron": "", "time_zone": "UTC"}).content.decode()
    assert "Type a cron expression" in empty and "field-error" not in empty and 'role="alert"' not in empty
    wrong = admin_client.get(reverse("cron_preview"), {"cron": "30 2 * *", "time_zone": "UTC"}).content.decode()
    assert 'class="field-error" role="alert"' in wrong  # once something is typed, a mistake is shown


def test_a_sent_form_shows_each_error_beside_its_field_and_linked_to_it(admin_client):
    post = {
        "name": "backlog",
        "kind": "backlog",
        "enabled": "on",
        "severity": "warning",
        "connection": "",
        "queue_glob": "",
        "threshold": "-5",
        "resolve_threshold": "",
        "window_minutes": "5",
        "min_volume": "0",
        "for_seconds": "60",
        "keep_firing_seconds": "0",
        "repeat_minutes": "240",
        "save": "1",
    }
    html = admin_client.post(reverse("alert_rule_new"), post).content.decode()
    field = re.search(r'<div class="field has-error" id="field-threshold">(.*?)</div>\s*</div>', html, re.S)
    assert field, html
    assert "The threshold cannot be negative." in field.group(1)
    assert re.search(r'<input[^>]*aria-describedby="[^"]*id_threshold_error[^"]*"', field.group(1))
    assert 'id="id_threshold_error"' in field.group(1) and 'aria-invalid="true"' in field.group(1)
