"""Users of each role, and API tokens for them, as the tests of pages and the API need them."""

from __future__ import annotations

from io import StringIO

from django.contrib.auth.models import Group, User
from django.core.management import call_command


def user_with(role: str | None, *, username: str | None = None) -> User:
    """A user with ``role`` (viewer, operator or admin; None is a plain viewer). An admin is
    a member of the admin group, like a user given the role with ``set_role``."""
    user = User.objects.create_user(username or f"user-{role}", password="pw")
    if role and role != "viewer":
        # One INSERT, not ``groups.add`` (a read, then a write, in one transaction): on SQLite
        # tests begin transactions DEFERRED, and a monitor thread's write between the two
        # failed the test with "database is locked".
        group = Group.objects.get_or_create(name=role)[0]
        User.groups.through.objects.bulk_create([User.groups.through(user=user, group=group)], ignore_conflicts=True)
    return user


def token_for(user: User) -> str:
    """A fresh API token for ``user``, issued the way an operator does it (``api_token``)."""
    out = StringIO()
    call_command("api_token", user.username, stdout=out)
    return out.getvalue().strip()
