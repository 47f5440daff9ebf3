"""Issue, list and revoke API tokens. Issuing and revoking are written to the audit log."""

import datetime

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from dashboard.accounts import tokens
from dashboard.accounts.models import SCOPES, ApiToken


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME and print it (it is shown only once); or --list tokens, "
        "or --revoke one by its hint or id."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", nargs="?")
        parser.add_argument(
            "--scope",
            action="append",
            choices=SCOPES,
            dest="scopes",
            help="Repeat for several. Default: all (the token acts with its user's role).",
        )
        parser.add_argument("--expires-in", type=int, metavar="DAYS", help="Expire the token after DAYS days.")
        parser.add_argument("--list", action="store_true", help="List tokens (of USERNAME, or everyone's).")
        parser.add_argument("--revoke", metavar="HINT_OR_ID", help="Revoke a token, by its hint (qw_…) or id.")

    def handle(self, *args, username=None, scopes=None, expires_in=None, list=False, revoke=None, **options):
        if list:
            return self._list(username)
        if revoke:
            return self._revoke(revoke)
        if not username:
            raise CommandError("Give a USERNAME (or --list / --revoke).")
        user = _user(username)
        if expires_in is not None and expires_in < 1:
            raise CommandError("--expires-in must be at least 1 day.")
        expires_at = timezone.now() + datetime.timedelta(days=expires_in) if expires_in else None
        _, token = tokens.issue(user, scopes=scopes or SCOPES, expires_at=expires_at, by=None, via="cli")
        self.stdout.write(token)

    def _list(self, username):
        rows = ApiToken.objects.select_related("user").order_by("user__username", "created_at")
        if username:
            rows = rows.filter(user=_user(username))
        for row in rows:
            expires = row.expires_at.isoformat() if row.expires_at else "never"
            used = row.last_used_at.isoformat() if row.last_used_at else "never"
            self.stdout.write(
                f"{row.pk}\t{row.user.username}\t{row.hint}…\t{','.join(row.scopes)}\t"
                f"{row.status}\texpires {expires}\tlast used {used}"
            )

    def _revoke(self, which):
        rows = (
            ApiToken.objects.filter(pk=int(which))
            if which.isdigit()
            else ApiToken.objects.filter(hint=which.rstrip("…"))
        )
        if rows.count() != 1:
            raise CommandError(f"{rows.count()} tokens match {which!r}; give the id from --list.")
        row = rows.get()
        tokens.revoke(row, by=None, via="cli")
        self.stdout.write(f"revoked {row.pk} ({row.user.username} {row.hint}…)")


def _user(username):
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise CommandError(f"No user named {username!r}. Create one with `python manage.py createsuperuser`.") from None
