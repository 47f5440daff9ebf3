"""Re-encrypt every stored secret with the first key of QUEUEWATCH_ENCRYPTION_KEY (key rotation:
see docs/operations.md). Safe to run twice; values no configured key opens are reported and left."""

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from dashboard.alerts.models import Channel
from dashboard.core.crypto import Undecryptable, UndecryptableSecret, derived_key, rotate


class Command(BaseCommand):
    help = "Re-encrypt webhook URLs, signing secrets and header values with the first QUEUEWATCH_ENCRYPTION_KEY."

    def add_arguments(self, parser):
        parser.add_argument(
            "--print-derived-key",
            action="store_true",
            help="Print the key derived from the current secret key (used while "
            "QUEUEWATCH_ENCRYPTION_KEY is unset) and stop.",
        )

    def handle(self, *args, print_derived_key=False, **options):
        if print_derived_key:
            self.stdout.write(derived_key(settings.SECRET_KEY))
            return
        done, stuck = 0, []
        with transaction.atomic():
            for channel in Channel.objects.select_for_update():
                try:
                    config = dict(channel.config or {})
                    if isinstance(config.get("url"), str) and config["url"]:  # a webhook URL (encrypted too)
                        config["url"] = rotate(config["url"])
                    if isinstance(config.get("headers"), dict):
                        config["headers"] = {name: rotate(value) for name, value in config["headers"].items()}
                    if isinstance(channel.secret, Undecryptable):
                        raise UndecryptableSecret("signing secret")
                except UndecryptableSecret:
                    stuck.append(channel.name)
                    continue
                channel.config = config
                channel.save(update_fields=["secret", "config"])  # the secret field encrypts with the first key
                done += 1
        self.stdout.write(f"re-encrypted the secrets of {done} channel(s)")
        if stuck:
            self.stderr.write("cannot decrypt (add the old key back, then run again): " + ", ".join(stuck))
