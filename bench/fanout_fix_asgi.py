"""What-if ASGI entry point for ``bench/fanout.py --what-if-dispatch-fix`` (not used by the
product): ``dashboard.asgi.application`` with one change to the live consumers, to measure a
suggested fix before it is made in ``dashboard/consumers.py``.

Channels 4.2+ ``AsyncConsumer.dispatch`` awaits ``aclose_old_connections()`` before EVERY
message handler: a ``sync_to_async(close_old_connections)`` hop to the one thread-sensitive
executor thread. A group message fanned out to N consumers in one daphne process therefore costs
N serialised thread hops, whatever the handler does. ``LiveConsumer.fragment_html`` only relays
HTML and never touches the database, so the hop is pure cost. This override relays fragments
directly and leaves every other message type to Channels' normal dispatch.

    daphne bench.fanout_fix_asgi:application
"""

from __future__ import annotations

from dashboard.asgi import application  # noqa: F401  (re-exported for daphne)
from dashboard import consumers, live

_original_dispatch = consumers.LiveConsumer.dispatch


async def _dispatch(self, message):
    if message.get("type") == live.FRAGMENT_TYPE:
        await self.fragment_html(message)  # relay only: no database, so no close_old_connections hop
        return
    await _original_dispatch(self, message)


consumers.LiveConsumer.dispatch = _dispatch
