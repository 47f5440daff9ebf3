"""Writing metric families in the Prometheus text format 0.0.4, and which samples a scrape asks
for (``name[]``)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import escape_label_name, escape_metric_name
from prometheus_client.utils import floatToGoString

# Bounds on ``name[]``: a scrape config lists families by hand, a few dozen at most.
MAX_NAMES = 200
MAX_NAME_LENGTH = 200


def sample_names(name: str, kind: str) -> tuple[str, ...]:
    """The names a family's samples carry in the text format (what ``name[]`` matches)."""
    if kind == "counter":
        return (name + "_total",)
    if kind == "histogram":
        return (name + "_bucket", name + "_count", name + "_sum")
    return (name,)


@dataclass(frozen=True)
class Wanted:
    """The samples a scrape asks for: ``name[]`` query parameters, each a sample's name as the
    text format writes it (``queuewatch_queue_jobs``, ``queuewatch_queue_completed_total``,
    ``queuewatch_job_wait_seconds_bucket``), as Prometheus' own client libraries read them; every
    sample when none is named. Families nobody asked for are not built, and documents no asked
    family needs are not read: at 10,000 queues the whole exposition is ~150 MB."""

    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: Iterable[str]) -> Wanted:
        """``ValueError`` for more than ``MAX_NAMES`` names or one longer than ``MAX_NAME_LENGTH``."""
        names = list(names)
        if len(names) > MAX_NAMES:
            raise ValueError(f"at most {MAX_NAMES} name[] parameters")
        if any(len(n) > MAX_NAME_LENGTH for n in names):
            raise ValueError(f"a name[] longer than {MAX_NAME_LENGTH} characters")
        return cls(frozenset(names))

    def family(self, name: str, kind: str) -> bool:
        return not self.names or not self.names.isdisjoint(sample_names(name, kind))

    def sample(self, name: str) -> bool:
        return not self.names or name in self.names

    def any_starting(self, *prefixes: str) -> bool:
        """Whether a family whose name starts so is wanted (which documents to read)."""
        return not self.names or any(n.startswith(prefixes) for n in self.names)


EVERYTHING = Wanted()


@functools.lru_cache(maxsize=1024)
def _metric_name(name: str) -> str:
    return escape_metric_name(name)


@functools.lru_cache(maxsize=1024)
def _label_name(name: str) -> str:
    return escape_label_name(name)


def _label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


_LE_PLACE = "\x00"  # where a bucket's ``le`` goes in its labels' cached text (never in a value)


class _Labels:
    """Each set of labels formatted once per scrape (a queue's, mostly). A histogram's buckets
    differ only in ``le``: their labels are formatted once around it, not once per bucket
    (at 10,000 queues, 1.3 million of 1.8 million lines)."""

    def __init__(self) -> None:
        self.seen: dict[tuple, str] = {}
        self.around_le: dict[tuple, tuple[str, str]] = {}

    def text(self, labels: dict[str, str]) -> str:
        le = labels.get("le")
        if le is not None:
            items = tuple(labels.items())
            # ``le`` comes last where the buckets are made (prometheus_client and ours).
            key = items[:-1] if items[-1][0] == "le" else tuple(item for item in items if item[0] != "le")
            around = self.around_le.get(key)
            if around is None:
                whole = self._format([*key, ("le", _LE_PLACE)])
                before, after = whole.split(f'le="{_LE_PLACE}"')
                around = self.around_le[key] = (before + 'le="', '"' + after)
            return around[0] + _label_value(le) + around[1]
        key = tuple(labels.items())
        text = self.seen.get(key)
        if text is None:
            text = self.seen[key] = self._format(list(key))
        return text

    @staticmethod
    def _format(items: list[tuple[str, str]]) -> str:
        inner = ",".join(f'{_label_name(k)}="{_label_value(v) if v != _LE_PLACE else v}"' for k, v in sorted(items))
        return "{" + inner + "}" if inner else ""


def exposition(families: Iterable[Metric], wanted: Wanted = EVERYTHING) -> str:
    """What ``prometheus_client.generate_latest`` writes for these families (the text format
    0.0.4), byte for byte (tests/health/golden/metrics.txt), written without its per-sample
    work: it validated and escaped every label name of every sample again, 60 us a sample, and
    a scrape of 2,000 queues is ~110,000 samples. Names are escaped once per name here and
    each set of labels is formatted once per scrape (``_Labels``). With ``wanted`` naming
    samples, only those are written, and a family without one is left out (as
    ``prometheus_client``'s restricted registry does)."""
    out: list[str] = []
    labels = _Labels()
    values: dict[float, str] = {}  # a value's text once per scrape: most are small counts

    def line(s) -> str:
        stamp = "" if s.timestamp is None else f" {int(float(s.timestamp) * 1000):d}"
        value = values.get(s.value)
        if value is None:
            value = values[s.value] = floatToGoString(s.value)
        return f"{_metric_name(s.name)}{labels.text(s.labels)} {value}{stamp}\n"

    for metric in families:
        name, kind = metric.name, metric.type
        if kind == "counter":
            name += "_total"
        elif kind == "info":
            name, kind = name + "_info", "gauge"
        elif kind == "stateset":
            kind = "gauge"
        elif kind == "gaugehistogram":
            kind = "histogram"
        elif kind == "unknown":
            kind = "untyped"
        samples = metric.samples if not wanted.names else [s for s in metric.samples if wanted.sample(s.name)]
        if wanted.names and not samples:
            continue
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {_metric_name(name)} {doc}\n# TYPE {_metric_name(name)} {kind}\n")
        extra: dict[str, list[str]] = {}  # OpenMetrics-only samples, as gauges after the family
        suffixed = {metric.name + suffix: suffix for suffix in ("_created", "_gsum", "_gcount")}
        for s in samples:
            suffix = suffixed.get(s.name)
            if suffix is None:
                out.append(line(s))
            else:
                extra.setdefault(suffix, []).append(line(s))
        for suffix, lines in sorted(extra.items()):
            out.append(f"# HELP {_metric_name(metric.name + suffix)} {doc}\n")
            out.append(f"# TYPE {_metric_name(metric.name + suffix)} gauge\n")
            out.extend(lines)
    return "".join(out)
