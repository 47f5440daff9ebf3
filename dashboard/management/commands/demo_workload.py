import asyncio
import os
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from dashboard.demo.workload import DEFAULT_RATE, DemoWorkloadError, run_workload


def _default_redis_url() -> str | None:
    for spec in getattr(settings, "QUEUEWATCH_CONNECTIONS", []):
        if spec.name == "default":
            return spec.url
    return None


class Command(BaseCommand):
    help = (
        "Run a demo BullMQ workload (several queues, retries, failures, delayed and prioritized "
        "jobs, a paused queue, job schedulers, a stalled job now and then, a payments-dlq) against "
        "QUEUEWATCH_REDIS_URL or --redis-url, until interrupted or --duration seconds have passed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--redis-url", help="Redis to write to (default: QUEUEWATCH_REDIS_URL).")
        parser.add_argument("--prefix", default="bull", help="BullMQ key prefix (default: bull).")
        parser.add_argument(
            "--rate",
            type=float,
            default=DEFAULT_RATE,
            help=f"Jobs added per second across all queues (default: {DEFAULT_RATE:g}).",
        )
        parser.add_argument(
            "--duration",
            type=float,
            default=None,
            help="Stop after this many seconds (default: run until interrupted).",
        )

    def handle(self, *args, redis_url=None, prefix="bull", rate=DEFAULT_RATE, duration=None, **options):
        url = redis_url or _default_redis_url()
        if not url:
            raise CommandError("No Redis to use: set QUEUEWATCH_REDIS_URL or pass --redis-url.")
        if rate is None or rate <= 0:
            raise CommandError("--rate must be a positive number.")
        if duration is not None and duration <= 0:
            raise CommandError("--duration must be a positive number of seconds.")
        if not prefix:
            raise CommandError("--prefix must not be empty.")
        try:
            asyncio.run(self._run(url, prefix, rate, duration))
        except DemoWorkloadError as exc:
            raise CommandError(str(exc)) from None

    async def _run(self, url: str, prefix: str, rate: float, duration: float | None) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        installed: list[int] = []
        signalled: list[int] = []

        def on_signal(signum: int) -> None:
            name = signal.Signals(signum).name
            if signalled:
                # Second signal: leave at once. Not via KeyboardInterrupt/cancellation: bullmq
                # 3.4.4's Worker.close() spins forever when asyncio.run() cancels its teardown
                # task. Jobs still active are left to the stalled checker, as after a crash.
                self.stderr.write(f"{name} again: exiting without waiting for active jobs")
                self.stderr.flush()
                os._exit(128 + signum)
            self.stderr.write(f"{name}: stopping the demo workload (waiting for active jobs; signal again to force)")
            signalled.append(signum)
            stop.set()

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, on_signal, sig)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):  # e.g. Windows
                    pass
        timer = loop.call_later(duration, stop.set) if duration else None
        try:
            await run_workload(url, prefix=prefix, stop=stop, rate=rate)
        finally:
            if timer is not None:
                timer.cancel()
            for sig in installed:
                loop.remove_signal_handler(sig)
