"""No login rate limit. 40 wrong passwords, then the right one, were accepted, on the
login page and on the admin's. Now django-axes counts failures per user name and per address."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

LOCKED = "Too many failed logins"


def attempt(client: Client, url: str, username: str, password: str):
    return client.post(url, {"username": username, "password": password, "next": "/"}, REMOTE_ADDR=client.address)


def client_from(address: str) -> Client:
    client = Client()
    client.address = address
    return client


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_forty_wrong_passwords_then_the_right_one_is_refused(url):
    User.objects.create_user("alice", password="right-pass", is_staff=True, is_superuser=True)
    attacker = client_from("203.0.113.7")
    for _ in range(40):
        attempt(attacker, url, "alice", "wrong")
    response = attempt(attacker, url, "alice", "right-pass")
    assert response.status_code == 429
    assert LOCKED in response.content.decode() and "15 minutes" in response.content.decode()
    assert "_auth_user_id" not in attacker.session
    # Per user: alice is locked from any address, for now.
    elsewhere = client_from("198.51.100.1")
    assert attempt(elsewhere, url, "alice", "right-pass").status_code == 429


def test_one_address_trying_many_users_is_locked_for_all_of_them(settings):
    User.objects.create_user("bob", password="bob-pass")
    sprayer = client_from("203.0.113.9")
    for n in range(settings.AXES_FAILURE_LIMIT):
        attempt(sprayer, "/login/", f"user{n}", "guess")
    assert attempt(sprayer, "/login/", "bob", "bob-pass").status_code == 429
    # bob himself, from his own address, is not affected.
    own = client_from("198.51.100.2")
    assert attempt(own, "/login/", "bob", "bob-pass").status_code == 302


def test_a_few_mistakes_do_not_lock_and_the_limit_is_configurable(settings):
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_user("carol", password="carol-pass")
    user = client_from("198.51.100.3")
    for _ in range(2):
        assert attempt(user, "/login/", "carol", "typo").status_code == 200
    assert attempt(user, "/login/", "carol", "carol-pass").status_code == 302
