import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create (or reset) the demo login for the embedded setup and print 'user / password'."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")

    def handle(self, *args, username, **options):
        password = secrets.token_urlsafe(9)
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = True  # the demo user can see and do everything
        user.set_password(password)
        user.save()
        self.stdout.write(f"{username} / {password}")
