"""The Content-Disposition header of a download whose name holds user-controlled text (a queue
name, a job id). Queue names may contain anything but ``:``, including ``"`` and ``;``, which
in a quoted ``filename`` parameter would end it and add parameters of their own choosing.

The plain ``filename`` is a safe ASCII stand-in (letters, digits, ``-_.``; everything else
``_``); the exact name travels in ``filename*`` (RFC 5987/6266), percent-encoded UTF-8, which
browsers prefer when they understand it.
"""

from __future__ import annotations

from urllib.parse import quote

MAX_NAME = 150


def ascii_safe(text: str, limit: int = MAX_NAME) -> str:
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in text)[:limit] or "download"


def attachment(filename: str) -> str:
    """``attachment; filename="<safe>"; filename*=UTF-8''<exact, percent-encoded>``."""
    exact = filename[:MAX_NAME]
    return f"attachment; filename=\"{ascii_safe(exact)}\"; filename*=UTF-8''{quote(exact, safe='')}"
