from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dashboard.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it (it is shown only once)."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {username!r}. Create one with `python manage.py createsuperuser`.")
        _, token = ApiToken.issue(user)
        self.stdout.write(token)
