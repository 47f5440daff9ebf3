import signal
import threading

from django.core.management.base import BaseCommand

from dashboard.monitor.gc_tuning import tune_for_the_monitor
from dashboard.monitor.loop import Monitor


class Command(BaseCommand):
    help = "Run the monitor: follow queues, publish live updates, keep history (one leader among many)."

    def add_arguments(self, parser):
        parser.add_argument("--name", default="monitor", help="Name shown in logs (useful with standbys).")
        parser.add_argument(
            "--lock-ttl-ms", type=int, default=5000, help="Leader lock TTL; a standby takes over within it."
        )

    def handle(self, *args, name, lock_ttl_ms, **options):
        tune_for_the_monitor()
        stop = threading.Event()
        # SIGTERM/SIGINT drain: finish the current step, flush history, release the lock.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        Monitor(name=name, lock_ttl_ms=lock_ttl_ms).run(stop)
