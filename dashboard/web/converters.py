"""How queue identities travel in URL paths.

Queue names (and prefixes) may contain ``/`` — Python BullMQ creates such names — but Django
decodes ``%2F`` before routing, so a ``/`` in a segment can never match a one-segment
converter, and ``reverse()`` would refuse it (``NoReverseMatch`` took whole pages down).
Every queue segment therefore goes through this converter: ``~`` is written ``~7E`` and ``/``
``~2F``; everything else is left to the URL's own percent-encoding. The mapping is reversible
and a name without ``/`` or ``~`` (almost all of them) keeps its plain, readable URL.
"""

from __future__ import annotations

from django.urls import register_converter

_ESCAPES = (("~", "~7E"), ("/", "~2F"))  # "~" first when encoding, last when decoding


def encode_segment(value: str) -> str:
    for raw, escaped in _ESCAPES:
        value = value.replace(raw, escaped)
    return value


def decode_segment(value: str) -> str:
    for raw, escaped in reversed(_ESCAPES):
        value = value.replace(escaped, raw)
    return value


class QueueSegmentConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return decode_segment(value)

    def to_url(self, value: str) -> str:
        return encode_segment(value)


register_converter(QueueSegmentConverter, "seg")

# A queue in page and API routes (each feature's urls.py starts its queue routes with these).
QUEUE_ROUTE = "q/<seg:connection>/<seg:prefix>/<seg:name>/"
API_QUEUE_ROUTE = "api/v1/queues/<seg:connection>/<seg:prefix>/<seg:name>"
