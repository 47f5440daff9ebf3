"""The edit-and-retry size bounds of this deployment (settings ``QUEUEWATCH_EDIT_MAX_*``), for
the rules in ``queues.edit_growth``: read once per use, so a test's settings apply."""

from __future__ import annotations

from django.conf import settings

from queues.edit_growth import GrowthBounds


def bounds() -> GrowthBounds:
    return GrowthBounds(
        patch=settings.QUEUEWATCH_EDIT_MAX_PATCH_BYTES,
        per_job=settings.QUEUEWATCH_EDIT_MAX_JOB_GROWTH,
        per_task=settings.QUEUEWATCH_EDIT_MAX_TASK_GROWTH,
    )
