"""What the scheduler forms (create and edit) share."""

from __future__ import annotations

from django.utils.html import format_html
from django.utils.safestring import SafeString

from queues import scheduler_runs
from queues.scheduler_template import TEMPLATE_OPTIONS


def option_names() -> SafeString:
    """The template options a scheduler takes, as code (BullMQ's names are not translated)."""
    return format_html("<code>{}</code>", ", ".join(TEMPLATE_OPTIONS))


def form_dates(spec, zone_name: str) -> dict:
    """The stored start and end as the form's date fields in ``zone_name``; one no date can show
    there is kept as its milliseconds (a hidden field), so saving unchanged does not drop it."""
    out = {}
    for name, ms in (("start", spec.start_date if spec else None), ("end", spec.end_date if spec else None)):
        shown = scheduler_runs.local_text(ms, zone_name)
        out[f"{name}_at"], out[f"{name}_ms"] = shown, ms if ms is not None and not shown else None
    return out
