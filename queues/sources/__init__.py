"""Monitored connections as *sources*: one interface (``base.Source``), one module per kind
(``redis_node``), one factory (``factory.source_for``). See ``docs/sources.md``."""

from .base import EventsReader, Source, UnsupportedBySource
from .factory import check_url, source_for
from .spec import ConnectionSpec, redact_url

# The table of kinds is ``factory.SOURCE_KINDS``; it is not re-exported, so there is one name for it.
__all__ = ["ConnectionSpec", "EventsReader", "Source", "UnsupportedBySource", "check_url", "redact_url", "source_for"]
