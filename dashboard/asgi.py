"""ASGI entry point: HTTP through Django, websockets through Channels.

Websockets require a same-origin Origin header, scheme, host and port
(``dashboard.web.socket_origin``): a page on another site cannot open a socket with the user's
cookies; and a logged-in session, for as long as the socket stays open
(``dashboard.live.socket_sessions``). Pathological Cookie headers are refused before anything
parses them (``dashboard.web.cookie_guard``).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from dashboard.routing import websocket_urlpatterns  # noqa: E402
from dashboard.web.cookie_guard import CookieGuard  # noqa: E402
from dashboard.web.socket_origin import SameOriginWebsockets  # noqa: E402

application = CookieGuard(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": SameOriginWebsockets(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)
