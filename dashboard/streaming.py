"""Downloads that stream for real, under ASGI as under WSGI, and a cap on how many run at once.

Django turns a *sync* iterator given to ``StreamingHttpResponse`` into a list before sending
the first byte when it serves over ASGI (daphne), so a "streamed" export of a million jobs was
built whole in the web process's memory. Under ASGI we therefore hand Django an *async*
iterator that pulls one chunk of the sync generator at a time in a worker thread
(``sync_to_async``; thread-sensitive, so database cursors stay on the request's own thread).
Producers yield one chunk per Redis page (or database batch), so the first chunk is on the
wire before the second page is read, and memory holds one page whatever the export's size.

``ExportSlots`` caps the downloads one user runs at once in this web process: each holds a
Redis or database cursor and a thread for as long as the client reads, so a viewer opening
many would otherwise tie the process up. The cap is per process on purpose: it protects that
process's memory and threads."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.utils.translation import gettext as _

from dashboard.errors import TooManyRequests

_END = object()


async def pulled_in_threads(chunks: Iterator[str]) -> AsyncIterator[str]:
    """``chunks`` as an async iterator: each ``next`` runs in a worker thread, so the event
    loop sends one chunk while the next is produced, and nothing is collected ahead."""
    pull = sync_to_async(next, thread_sensitive=True)
    try:
        while (chunk := await pull(chunks, _END)) is not _END:
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=True)()


class Download(StreamingHttpResponse):
    """A streaming response that runs ``on_close`` once when Django closes it (after the last
    byte, or when the client went away)."""

    def __init__(self, *args, on_close: Callable[[], None], **kwargs):
        super().__init__(*args, **kwargs)
        self._on_close = on_close

    def close(self):
        try:
            super().close()
        finally:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close()


class ExportSlots:
    """How many downloads each user has running in this process (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running: dict[object, int] = {}

    def acquire(self, who, *, limit: int) -> Callable[[], None]:
        """Take a slot for ``who`` or raise ``TooManyRequests``; returns the release function
        (safe to call more than once)."""
        with self._lock:
            if self._running.get(who, 0) >= limit:
                raise TooManyRequests(_(
                    "You already have %(count)d downloads running; wait for one to finish, then try again."
                ) % {"count": limit})
            self._running[who] = self._running.get(who, 0) + 1
        released = threading.Event()

        def release() -> None:
            with self._lock:
                if released.is_set():
                    return
                released.set()
                left = self._running.get(who, 1) - 1
                if left > 0:
                    self._running[who] = left
                else:
                    self._running.pop(who, None)

        return release

    def running(self, who) -> int:
        with self._lock:
            return self._running.get(who, 0)


SLOTS = ExportSlots()


def download(request, chunks: Iterator[str], *, content_type: str) -> Download:
    """``chunks`` (a generator of text chunks) as a streaming download for ``request``'s user,
    who may run at most ``QUEUEWATCH_EXPORTS_PER_USER`` at once (``TooManyRequests`` beyond)."""
    who = getattr(request.user, "pk", None) or f"anonymous:{request.META.get('REMOTE_ADDR', '')}"
    release = SLOTS.acquire(who, limit=settings.QUEUEWATCH_EXPORTS_PER_USER)
    try:
        content = pulled_in_threads(chunks) if isinstance(request, ASGIRequest) else chunks
        return Download(content, content_type=content_type, on_close=release)
    except BaseException:
        release()
        raise
