from django.core.management.base import BaseCommand

from dashboard.alerts.models import AlertRule

# What the demo workload makes happen: failures reaching payments' dead-letter set, and a
# thumbnails job that stalls now and then. No channels: the alerts show on every page and in
# the alert history; add a channel on the Channels page to be notified.
DEMO_RULES = [
    dict(
        name="Demo: dead letters growing",
        kind="dlq_growth",
        queue_glob="payments*",
        threshold=0.2,
        resolve_threshold=0.0,
        window_minutes=5,
        for_seconds=30,
        severity="critical",
    ),
    dict(
        name="Demo: jobs stalling",
        kind="stalled_window",
        queue_glob="thumbnails",
        threshold=0,
        window_minutes=15,
        severity="warning",
    ),
]


class Command(BaseCommand):
    help = "Create the demo alert rules (once; existing rules of the same name are left as they are)."

    def handle(self, *args, **options):
        for fields in DEMO_RULES:
            rule = AlertRule(**fields)
            if AlertRule.objects.filter(name=rule.name).exists():
                continue
            rule.full_clean()
            rule.save()
            self.stdout.write(f"created alert rule {rule.name!r}")
