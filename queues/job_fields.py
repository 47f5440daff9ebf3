"""One field of many jobs across connections, through each connection's probes: how the
monitor learns names, options and attempt counters of jobs it met only as events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .errors import SourceUnavailable
from .keys import QueueRef

if TYPE_CHECKING:
    from .sources.facets import ProbesFacet


def read_job_field(
    probes_for: Callable[[str], ProbesFacet | None], jobs: Iterable[tuple[QueueRef, str]], field: str
) -> dict[tuple[QueueRef, str], bytes | None]:
    """One field of each job, one probe per connection (``ProbesFacet.job_fields``). The jobs
    of a connection that cannot be read, or whose kind has no probes, are left out (the caller
    asks again later); a job that is gone reads ``None``."""
    by_conn: dict[str, list[tuple[QueueRef, str]]] = {}
    for job in jobs:
        by_conn.setdefault(job[0].connection, []).append(job)
    read: dict[tuple[QueueRef, str], bytes | None] = {}
    for name, items in by_conn.items():
        probes = probes_for(name)
        if probes is None:
            continue
        try:
            read.update(zip(items, (values[0] for values in probes.job_fields(items, (field,)))))
        except SourceUnavailable:
            continue
    return read
