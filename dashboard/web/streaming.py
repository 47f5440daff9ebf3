"""Downloads that stream for real, under ASGI as under WSGI, and a cap on how many run at once.

Django turns a *sync* iterator given to ``StreamingHttpResponse`` into a list before sending
the first byte when it serves over ASGI, so a "streamed" export of a million jobs was
built whole in the web process's memory. Under ASGI we therefore hand Django an *async*
iterator that pulls one chunk of the sync generator at a time in a worker thread
(``sync_to_async``; thread-sensitive, so database cursors stay on the request's own thread).
Producers yield one chunk per Redis page (or database batch), so the first chunk is on the
wire before the second page is read, and memory holds one page whatever the export's size.

The next chunk is pulled only once the last one was handed to the server, and the server
Queuewatch ships (``dashboard.serve``, uvicorn) returns from ``send`` only when the socket can
take more: a client that stops reading stops the export (back-pressure), and the process holds
about one page for it, not the whole file.

The cap (``QUEUEWATCH_EXPORTS_PER_USER``) counts a user's downloads across *every* web
process: each download holds a lease in Queuewatch's own Redis (``download_slots``), taken
before the response starts, renewed on a timer while the response is open (a stalled client's
download still holds its page and socket buffers, so it keeps counting), and given back when it
ends, when the client goes away (at once, even while the producer still waits on Redis), or —
if the web process dies — when the lease lapses unrenewed. The cap times one page (exporters
bound a page's bytes) bounds the bytes one user keeps in flight."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse

from dashboard.web import download_slots

_END = object()


async def _renew_every(renew: Callable[[], None], seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds)
        await sync_to_async(renew, thread_sensitive=False)()


async def pulled_in_threads(
    chunks: Iterator[str], *, on_end: Callable[[], None], renew: Callable[[], None] | None = None
) -> AsyncIterator[str]:
    """``chunks`` as an async iterator: each ``next`` runs in a worker thread, so the event
    loop sends one chunk while the next is produced, and nothing is collected ahead.
    ``renew`` runs every ``download_slots.RENEW_EVERY_S`` while the stream is open, whether or
    not the client reads. ``on_end`` runs first when the stream ends for any reason: on a
    client disconnect Django cancels us while that thread may still wait on Redis, and the slot
    must not wait too."""
    pull = sync_to_async(next, thread_sensitive=True)
    renewing = asyncio.ensure_future(_renew_every(renew, download_slots.RENEW_EVERY_S)) if renew else None
    try:
        while (chunk := await pull(chunks, _END)) is not _END:
            yield chunk
    finally:
        if renewing is not None:
            renewing.cancel()
        await sync_to_async(on_end, thread_sensitive=False)()
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


def download(request, chunks: Iterator[str], *, content_type: str) -> Download:
    """``chunks`` (a generator of text chunks) as a streaming download for ``request``'s user,
    who may run at most ``QUEUEWATCH_EXPORTS_PER_USER`` at once across all web processes
    (``TooManyRequests`` beyond)."""
    who = getattr(request.user, "pk", None) or f"anonymous:{request.META.get('REMOTE_ADDR', '')}"
    slot = download_slots.acquire(str(who), limit=settings.QUEUEWATCH_EXPORTS_PER_USER)
    try:
        if isinstance(request, ASGIRequest):
            content = pulled_in_threads(chunks, on_end=slot.release, renew=slot.renew)
        else:  # WSGI: a thread per response, renewed as chunks are produced
            content = slot.renewing(chunks)
        return Download(content, content_type=content_type, on_close=slot.release)
    except BaseException:
        slot.release()
        raise
