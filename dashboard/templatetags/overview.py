"""The overview table from its column declarations (``dashboard.browse.columns``)."""

from __future__ import annotations

from django import template

from dashboard.browse import columns

register = template.Library()


@register.simple_tag
def overview_columns() -> list[columns.OverviewColumn]:
    """The columns, for the header row."""
    return list(columns.COLUMNS)


@register.simple_tag
def overview_cells(sig):
    """A queue's cells, as the page shows them and the monitor sends them."""
    return columns.render_cells(sig)
