"""ASGI entry point: HTTP through Django; websockets are added by the live-updates work."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

application = ProtocolTypeRouter({"http": django_asgi_app})
