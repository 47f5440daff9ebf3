"""When the dashboard Redis is a monitored connection's server, every BullMQ client can write
Queuewatch's keys: admins (who can move it) are told so on every page, with the fix; operators
and viewers are not. Computed once by the settings, from the environment; turned off on purpose
with QUEUEWATCH_SHARED_DASHBOARD_REDIS_OK=1."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.accounts import user_with
from tests.support.django_process import settings_of

BANNER = 'id="dashboard-redis-shared"'


def page_for(client, role: str) -> str:
    client.force_login(user_with(role))
    return client.get(reverse("tokens")).content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
def test_only_admins_are_warned_that_the_dashboard_redis_is_shared(client, settings, role):
    settings.QUEUEWATCH_DASHBOARD_REDIS_SHARED_WITH = ["default", "orders"]
    page = page_for(client, role)
    if role == "admin":
        assert BANNER in page
        assert "<bdi>default, orders</bdi>" in page
        assert "QUEUEWATCH_DASHBOARD_REDIS_URL" in page and "docs/operations.md#trust-model" in page
    else:
        assert BANNER not in page


@pytest.mark.django_db
def test_admins_are_not_warned_when_the_dashboard_redis_is_its_own(client, settings):
    settings.QUEUEWATCH_DASHBOARD_REDIS_SHARED_WITH = []
    assert BANNER not in page_for(client, "admin")


def test_the_settings_compare_the_servers_once_and_an_acknowledgement_turns_it_off():
    shared = {"QUEUEWATCH_REDIS_URL": "redis://127.0.0.1:1/0"}  # the default: the dashboard Redis too
    separate = {**shared, "QUEUEWATCH_DASHBOARD_REDIS_URL": "redis://127.0.0.1:2/0"}
    acknowledged = {**shared, "QUEUEWATCH_SHARED_DASHBOARD_REDIS_OK": "1"}
    found = [settings_of(env, "QUEUEWATCH_DASHBOARD_REDIS_SHARED_WITH") for env in (shared, separate, acknowledged)]
    assert found == [["['default']"], ["[]"], ["[]"]]
