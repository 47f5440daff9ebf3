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

from dashboard.accounts import scopes
from dashboard.accounts.auth import OPERATOR, has_role
from dashboard.core import dash_redis
from dashboard.core.channel_layer import DROPPED_TYPE
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.core.i18n import language_for_scope
from dashboard.live import channels as live
from dashboard.live import overview_rows, socket_grants, socket_leases, socket_sessions
from dashboard.live import scoped as scoped_fragments
from queues.keys import QueueRef
from queues.states import BROWSABLE_STATES

DENIED_ROWS_KEPT_S = 60.0  # a scoped socket judges rows it refused again after this long
NOT_FOUND = 4404  # a queue page's socket for a queue outside the user's scope


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
        self.scoped = await sync_to_async(scopes.is_scoped)(self.scope.get("user"))
        if self.scoped and not await self.page_in_scope():
            # A queue (or task) outside the user's scope: as if it did not exist.
            await self.accept()
            await self.leave_groups()
            self.ended = True
            await self.close(code=NOT_FOUND)
            return
        # One of the user's capped places (``socket_leases``), or closed with the code the page
        # shows as "too many live tabs".
        if not await sync_to_async(socket_leases.take)(self.scope["user"].pk, self.channel_name):
            await self.accept()
            await self.end_session(socket_leases.TOO_MANY_SOCKETS)
            return
        self.lease_holder = self.scope["user"].pk
        self.lease_renewal = asyncio.create_task(self.keep_lease())
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
        if renewal := getattr(self, "lease_renewal", None):
            renewal.cancel()
            await sync_to_async(socket_leases.give_back)(self.lease_holder, self.channel_name)
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
        if self.ended:  # a fragment already on its way when the session ended is dropped
            return
        if self.scoped:
            html = await self.in_scope(html)
        if html:
            await self.send(text_data=html)

    # --- a scoped user's socket: keeps what is theirs (dashboard.live.scoped) --------------

    scoped = False

    async def in_scope(self, html: str) -> str:
        render = scoped_fragments.per_user.get(scoped_fragments.element_of(html) or "")
        if render is not None:
            return await sync_to_async(render)(self.scope.get("user"), self.language)
        rows = scoped_fragments.split_rows(html)
        if rows is None:
            return html
        return "".join([row for row in rows if await self.row_allowed(scoped_fragments.element_of(row) or "")])

    async def row_allowed(self, element: str) -> bool:
        now = asyncio.get_running_loop().time()
        if now - getattr(self, "denied_since", now) > DENIED_ROWS_KEPT_S:
            self.denied_rows = set()  # in case a list was published late: judge them again
        allowed, denied = getattr(self, "allowed_rows", None), getattr(self, "denied_rows", set())
        if allowed is None or (element not in allowed and element not in denied):
            # The first row, or one of a queue created since: read the list of queues again
            # (once per new row id: rows of other teams' queues are remembered as theirs).
            user = self.scope.get("user")
            self.allowed_rows = allowed = await sync_to_async(scoped_fragments.visible_row_ids)(user, self.redis())
            if element not in allowed:
                if not denied:
                    self.denied_since = now
                self.denied_rows = {*denied, element}
        return element in allowed

    # --- the login session ------------------------------------------------------------------

    async def session_ended(self, event):
        await self.end_session()

    async def session_changed(self, event):
        if await socket_sessions.standing(self.scope) is None:
            await self.end_session()

    async def grants_changed(self, event):
        # What the user may see here was decided at connect: the page connects again to decide anew.
        await self.end_session(socket_grants.RECONNECT)

    async def watch_session(self, standing: socket_sessions.Standing):
        while True:
            await asyncio.sleep(standing.seconds_to_next_check())
            if (checked := await socket_sessions.standing(self.scope)) is None:
                await self.end_session()
                return
            standing = checked

    async def keep_lease(self):
        while True:
            await asyncio.sleep(socket_leases.RENEW_EVERY_S)
            await sync_to_async(socket_leases.renew)(self.lease_holder, self.channel_name)

    async def end_session(self, code: int = socket_sessions.SIGNED_OUT):
        """Nothing more reaches this socket: leave every group, then close with ``code`` (by
        default the one the page shows as "signed out")."""
        if self.ended:
            return
        self.ended = True
        watch = getattr(self, "session_watch", None)
        if watch and watch is not asyncio.current_task():
            watch.cancel()
        await self.leave_groups()
        await self.close(code=code)

    async def leave_groups(self):
        for group in [*getattr(self, "joined", []), *getattr(self, "session_groups", [])]:
            await self.channel_layer.group_discard(group, self.channel_name)

    # --- per page ---------------------------------------------------------------------------

    def groups_for_page(self) -> list[str]:
        return []

    async def page_in_scope(self) -> bool:
        return True

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
        if items := self.watches():
            await sync_to_async(dash_redis.watch)(self.redis(), items, self.channel_name)
        if self.announces_language():
            await sync_to_async(dash_redis.announce_language)(self.redis(), self.language)

    async def keep_watching(self):
        while True:
            await asyncio.sleep(dash_redis.WATCH_TTL_S / 3)
            await self.register_watches()


class OverviewConsumer(LiveConsumer):
    """The overview's socket: the rows of the page's view (``overview_rows``), which the page
    names once the socket is open and again when its tables are replaced."""

    view: str | None = None
    rows: tuple[QueueRef, ...] = ()

    def groups_for_page(self):
        return [live.OVERVIEW]

    def watches(self):
        return [dash_redis.Watch.overview_row(q) for q in self.rows]

    async def receive(self, text_data=None, bytes_data=None):
        name = overview_rows.view_named(text_data)
        if name is None or self.ended:
            return  # anything else the page (or anyone) sends is ignored
        self.view = name
        await self.follow_view()
        if getattr(self, "heartbeat", None) is None:
            self.heartbeat = asyncio.create_task(self.keep_watching())

    async def follow_view(self) -> None:
        """Watch the view's rows (and no longer those of a view the page replaced)."""
        if self.view is None:
            return
        try:
            rows = await sync_to_async(overview_rows.rows_of)(self.redis(), self.view, self.scope.get("user"))
        except (DashboardRedisError, ValueError):
            return  # the watches lapse on their own; the next refresh tries again
        if rows is None:
            return
        gone = [w for w in self.watches() if w.queue not in set(rows)]
        self.rows = tuple(rows)
        if gone:
            await sync_to_async(dash_redis.unwatch)(self.redis(), gone, self.channel_name)
        await super().register_watches()

    async def register_watches(self):
        if self.view is None:
            await super().register_watches()
        else:  # the view's rows again: the view is kept, and a grant changed since is applied
            await self.follow_view()


class QueuePageConsumer(LiveConsumer):
    async def page_in_scope(self) -> bool:
        return await sync_to_async(scoped_fragments.page_visible)(self.scope.get("user"), self.queue())


class QueueConsumer(QueuePageConsumer):
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


class JobConsumer(QueuePageConsumer):
    operates = False

    async def connect(self):
        # An operator's page also gets the job's actions as they change with its state.
        self.operates = await sync_to_async(has_role)(self.scope.get("user"), OPERATOR, self.queue())
        await super().connect()

    def groups_for_page(self):
        # An operator's group gets the job's live part and its actions in one message (one swap),
        # a viewer's the live part alone: each socket joins one of the two.
        q, job_id = self.queue(), self.scope["url_route"]["kwargs"]["job_id"]
        return [live.job_operators_group(q, job_id) if self.operates else live.job_group(q, job_id)]

    def watches(self):
        return [dash_redis.Watch.job(self.queue(), self.scope["url_route"]["kwargs"]["job_id"])]


class TaskConsumer(LiveConsumer):
    """Progress of one background bulk task; the runner publishes, nothing to watch."""

    def groups_for_page(self):
        return [live.task_group(self.scope["url_route"]["kwargs"]["task_id"])]

    async def page_in_scope(self) -> bool:
        task_id = self.scope["url_route"]["kwargs"]["task_id"]
        return await sync_to_async(scoped_fragments.task_visible)(self.scope.get("user"), task_id)
