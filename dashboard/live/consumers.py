"""Websocket consumers: authorise, join groups, send the latest fragments, relay; close when
the login session ends (the rule and its signals: ``socket_sessions``).

They never read the monitored Redis: everything they send was rendered once by the monitor,
so the number of open tabs does not change the load on production Redis. A consumer for a
queue page, a job list or a job also keeps a "watch" entry fresh so the monitor knows what to
render, and removes it when the tab closes: the monitor renders nothing of a queue page's that
nobody views.
"""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from dashboard.accounts.auth import OPERATOR, has_role
from dashboard.core import dash_redis
from dashboard.core.channel_layer import DROPPED_TYPE
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.core.i18n import language_for_scope
from dashboard.live import channels as live
from dashboard.live import socket_sessions
from queues.keys import QueueRef
from queues.states import BROWSABLE_STATES


class LiveConsumer(AsyncWebsocketConsumer):
    ended = False  # the login session has ended: nothing more is sent

    async def connect(self):
        # Joined before the check, so a logout right after it still reaches this socket.
        self.session_groups = socket_sessions.groups_of(self.scope)
        for group in self.session_groups:
            await self.channel_layer.group_add(group, self.channel_name)
        standing = await socket_sessions.standing(self.scope)
        if standing is None:
            # Accepted, then closed with the code: a refused handshake reaches the page as a bare
            # 1006, which it would retry forever.
            await self.accept()
            await self.end_session()
            return
        self.session_watch = asyncio.create_task(self.watch_session(standing))
        # The page was rendered in this language: join the groups of fragments rendered in it.
        language = language_for_scope(self.scope)
        self.joined = [live.language_group(group, language) for group in (live.ALL, *self.groups_for_page())]
        for group in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
        self.language = language
        if self.watches() or self.announces_language():
            await self.register_watches()  # before accepting, so the monitor knows at once
            if self.watches():  # and renders what it watches now, not at its next tick
                await sync_to_async(dash_redis.announce_watching)(self.redis(), self.watches()[0].queue)
            self.heartbeat = asyncio.create_task(self.keep_watching())
        await self.accept()
        # A fresh snapshot on every (re)connect, so a dropped message or a gap heals itself.
        for group in self.joined:
            for html in await sync_to_async(dash_redis.cached_fragments)(self.redis(), group):
                await self.relay(html)

    async def disconnect(self, code):
        await self.leave_groups()
        if watch := getattr(self, "session_watch", None):
            watch.cancel()
        task = getattr(self, "heartbeat", None)
        if task:
            task.cancel()
            try:
                await sync_to_async(dash_redis.unwatch)(self.redis(), self.watches(), self.channel_name)
            except DashboardRedisError:
                pass  # the dashboard Redis is away: the entries lapse on their own (WATCH_TTL_S)

    async def receive(self, text_data=None, bytes_data=None):
        pass  # the page sends nothing; htmx's ws extension may send form data we ignore

    async def dispatch(self, message):
        # Fragments touch no database, so skip Channels' per-message close_old_connections()
        # thread hop: with hundreds of sockets it was a quarter of the server's time per update.
        if message["type"] == live.FRAGMENT_TYPE:
            await self.fragment_html(message)
        elif message["type"] != DROPPED_TYPE:  # a message someone else pushed into the layer
            await super().dispatch(message)

    async def fragment_html(self, event):
        html = live.fragment_of(event)
        if html is not None:  # only what the monitor signed reaches the browser
            await self.relay(html)

    async def relay(self, html: str):
        if not self.ended:  # a fragment already on its way when the session ended is dropped
            await self.send(text_data=html)

    # --- the login session ------------------------------------------------------------------

    async def session_ended(self, event):
        await self.end_session()

    async def session_changed(self, event):
        if await socket_sessions.standing(self.scope) is None:
            await self.end_session()

    async def watch_session(self, standing: socket_sessions.Standing):
        while True:
            await asyncio.sleep(standing.seconds_to_next_check())
            if (checked := await socket_sessions.standing(self.scope)) is None:
                await self.end_session()
                return
            standing = checked

    async def end_session(self):
        """Nothing more reaches this socket: leave every group, then close with the code the
        page shows as "signed out"."""
        if self.ended:
            return
        self.ended = True
        watch = getattr(self, "session_watch", None)
        if watch and watch is not asyncio.current_task():
            watch.cancel()
        await self.leave_groups()
        await self.close(code=socket_sessions.SIGNED_OUT)

    async def leave_groups(self):
        for group in [*getattr(self, "joined", []), *getattr(self, "session_groups", [])]:
            await self.channel_layer.group_discard(group, self.channel_name)

    # --- per page ---------------------------------------------------------------------------

    def groups_for_page(self) -> list[str]:
        return []

    def watches(self) -> list[dash_redis.Watch]:
        return []

    def queue(self) -> QueueRef:
        kw = self.scope["url_route"]["kwargs"]
        return QueueRef(kw["connection"], kw["prefix"], kw["name"])

    def redis(self):
        if not hasattr(self, "_redis"):
            self._redis = dash_redis.dashboard_redis()
        return self._redis

    def announces_language(self) -> bool:
        return getattr(self, "language", settings.LANGUAGE_CODE) != settings.LANGUAGE_CODE

    async def register_watches(self):
        for item in self.watches():
            await sync_to_async(dash_redis.watch)(self.redis(), item, self.channel_name)
        if self.announces_language():
            await sync_to_async(dash_redis.announce_language)(self.redis(), self.language)

    async def keep_watching(self):
        while True:
            await asyncio.sleep(dash_redis.WATCH_TTL_S / 3)
            await self.register_watches()


class OverviewConsumer(LiveConsumer):
    def groups_for_page(self):
        return [live.OVERVIEW]


class QueueConsumer(LiveConsumer):
    def list_state(self) -> str | None:
        query = dict(
            pair.split("=", 1) for pair in self.scope.get("query_string", b"").decode().split("&") if "=" in pair
        )
        state = query.get("state")
        return state if query.get("list") == "1" and state in BROWSABLE_STATES else None

    def groups_for_page(self):
        q = self.queue()
        state = self.list_state()
        return [live.queue_group(q)] + ([live.list_group(q, state)] if state else [])

    def watches(self):
        q, state = self.queue(), self.list_state()
        return [dash_redis.Watch.queue_page(q)] + ([dash_redis.Watch.job_list(q, state)] if state else [])


class JobConsumer(LiveConsumer):
    operates = False

    async def connect(self):
        # An operator's page also gets the job's actions as they change with its state.
        self.operates = await sync_to_async(has_role)(self.scope.get("user"), OPERATOR)
        await super().connect()

    def groups_for_page(self):
        q, job_id = self.queue(), self.scope["url_route"]["kwargs"]["job_id"]
        return [live.job_group(q, job_id)] + ([live.job_operators_group(q, job_id)] if self.operates else [])

    def watches(self):
        return [dash_redis.Watch.job(self.queue(), self.scope["url_route"]["kwargs"]["job_id"])]


class TaskConsumer(LiveConsumer):
    """Progress of one background bulk task; the runner publishes, nothing to watch."""

    def groups_for_page(self):
        return [live.task_group(self.scope["url_route"]["kwargs"]["task_id"])]
