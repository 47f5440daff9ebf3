"""How queue identities travel in URL paths.

Queue names (and prefixes) may contain ``/`` — Python BullMQ creates such names — but Django
decodes ``%2F`` before routing, so a ``/`` in a segment can never match a one-segment
converter, and ``reverse()`` would refuse it (``NoReverseMatch`` took whole pages down).
Every queue segment therefore goes through this converter: ``~`` is written ``~7E`` and ``/``
``~2F``; everything else is left to the URL's own percent-encoding. The mapping is reversible
and a name without ``/`` or ``~`` (almost all of them) keeps its plain, readable URL.

Two more kinds of value were unreachable even so: a whole segment ``.`` or ``..`` (browsers, and
``%2E`` forms too, resolve them as "this/parent folder" before sending the request), and control
characters (Django's routes do not match a newline). A queue segment that is exactly ``.`` or
``..`` is written with ``~2E`` for each dot; job ids (``jobid``, which may contain ``/``) escape
their ``.``/``..`` segments the same way and every control character as ``~XX``. ``~`` escapes
are decoded wherever they appear (a literal ``~`` is always written ``~7E``).
"""

from __future__ import annotations

import re

from django.urls import register_converter

_ESCAPES = (("~", "~7E"), ("/", "~2F"))  # "~" first when encoding, last when decoding


_DOT_SEGMENTS = (".", "..")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ESCAPED = re.compile(r"~([0-9A-F]{2})")


def _dots(segment: str) -> str:
    return segment.replace(".", "~2E") if segment in _DOT_SEGMENTS else segment


def encode_segment(value: str) -> str:
    for raw, escaped in _ESCAPES:
        value = value.replace(raw, escaped)
    return _dots(value)


def decode_segment(value: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), value)


def encode_job_id(value: str) -> str:
    """A job id as a URL path (its ``/`` kept as separators)."""
    value = _CONTROL.sub(lambda m: f"~{ord(m.group()):02X}", value.replace("~", "~7E"))
    return "/".join(_dots(part) for part in value.split("/"))


class JobIdConverter:
    regex = ".+"

    def to_python(self, value: str) -> str:
        return decode_segment(value)

    def to_url(self, value: str) -> str:
        return encode_job_id(value)


class QueueSegmentConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return decode_segment(value)

    def to_url(self, value: str) -> str:
        return encode_segment(value)


register_converter(QueueSegmentConverter, "seg")
register_converter(JobIdConverter, "jobid")

# A queue in page and API routes (each feature's urls.py starts its queue routes with these).
QUEUE_ROUTE = "q/<seg:connection>/<seg:prefix>/<seg:name>/"
API_QUEUE_ROUTE = "api/v1/queues/<seg:connection>/<seg:prefix>/<seg:name>"
