import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings

from dashboard.accounts import auth

pytestmark = pytest.mark.django_db


def user_in(group: str | None, **extra) -> User:
    user = User.objects.create_user(f"u-{group}-{len(extra)}", password="x", **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def test_groups_exist_and_roles_include_the_ones_below():
    plain, operator, admin = user_in(None), user_in("operator"), user_in("admin")
    superuser = user_in(None, is_superuser=True)
    assert [auth.role_of(u) for u in (plain, operator, admin, superuser)] == ["viewer", "operator", "admin", "admin"]
    assert auth.has_role(operator, "viewer") and auth.has_role(operator, "operator")
    assert not auth.has_role(operator, "admin") and not auth.has_role(plain, "operator")


def test_anonymous_and_inactive_users_have_no_role():
    from django.contrib.auth.models import AnonymousUser

    assert auth.role_of(AnonymousUser()) is None
    assert auth.role_of(user_in("admin", is_active=False)) is None


def test_read_only_mode_turns_operating_off_in_the_template_context(rf):
    request = rf.get("/")
    request.user = user_in("operator")
    assert auth.context(request)["can_operate"] is True
    with override_settings(QUEUEWATCH_READ_ONLY=True):
        ctx = auth.context(request)
        assert ctx["can_operate"] is False and ctx["read_only"] is True
