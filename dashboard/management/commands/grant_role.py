from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from dashboard.accounts.auth import ROLES
from dashboard.accounts.models import QueueGrant
from dashboard.audit import log as audit


class Command(BaseCommand):
    help = (
        "Give USERNAME (or, with --group, the group NAME) ROLE on the queues of one connection and/or "
        "matching a glob; --remove takes that grant away, --list shows the grants. A user with grants and "
        "no role group sees only those queues (docs/auth.md, 'Scoped grants')."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?")
        parser.add_argument("role", nargs="?", choices=ROLES)
        parser.add_argument("--group", action="store_true", help="NAME is a group, not a user")
        parser.add_argument("--connection", default="", help="one connection (default: any)")
        parser.add_argument("--queue", default="", help="a queue name or glob, e.g. 'tenant-a-*' (default: any)")
        parser.add_argument("--remove", action="store_true")
        parser.add_argument("--list", action="store_true", dest="show")

    def handle(self, *args, name, role, group, connection, queue, remove, show, **options):
        if show:
            for g in QueueGrant.objects.select_related("user", "group").order_by("pk"):
                self.stdout.write(str(g))
            return
        if not name or not role:
            raise CommandError("Give a name and a role (or --list).")
        who = self._who(name, group)
        fields = {"group" if group else "user": who, "role": role, "connection": connection, "queue_glob": queue}
        if remove:
            removed, _ = QueueGrant.objects.filter(**fields).delete()
            if not removed:
                raise CommandError("No such grant.")
            action, row = "user.ungrant", QueueGrant(**fields)
        else:
            row, _ = QueueGrant.objects.get_or_create(**fields)
            action = "user.grant"
        audit.record_event(user=None, via="cli", action=action, target=f"grant “{row}”")
        self.stdout.write(f"{'removed' if remove else 'granted'}: {row}")

    def _who(self, name: str, group: bool):
        model = Group if group else get_user_model()
        try:
            return model.objects.get(name=name) if group else model.objects.get(username=name)
        except model.DoesNotExist:
            raise CommandError(f"No {'group' if group else 'user'} named {name!r}.") from None
