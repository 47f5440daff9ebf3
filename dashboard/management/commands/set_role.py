from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from dashboard.accounts.auth import ROLES, role_of
from dashboard.audit import log as audit


class Command(BaseCommand):
    help = "Give USERNAME exactly one Queuewatch role (viewer, operator or admin)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("role", choices=ROLES)

    def handle(self, *args, username, role, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(
                f"No user named {username!r}. Create one with `python manage.py createsuperuser`."
            ) from None
        before = role_of(user)
        # One role at a time: roles include the ones below, so extra groups would only confuse.
        user.groups.remove(*Group.objects.filter(name__in=ROLES))
        if role != "viewer":  # every logged-in user is at least a viewer
            # The role groups come from a data migration; a database that lost them (restored
            # without that data, a group deleted in the admin) gets the group back here.
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        note = " (a superuser stays admin whatever the groups say)" if user.is_superuser and role != "admin" else ""
        audit.record_event(
            user=None,
            via="cli",
            action="user.set_role",
            target=f"user {user.pk} “{username}”",
            details={"from": before, "to": role_of(user)},
        )
        self.stdout.write(f"{username} is now {role}{note}")
