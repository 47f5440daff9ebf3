"""A demo BullMQ workload (``python manage.py demo_workload``) so the dashboard has real data."""

from .workload import DEFAULT_RATE, run_workload

__all__ = ["DEFAULT_RATE", "run_workload"]
