"""Naming Queuewatch's connections (``CLIENT SETNAME queuewatch``) without depending on it.

redis-py sends ``CLIENT SETNAME`` while connecting and fails the connection when Redis refuses
it. Managed services that disable ``CLIENT`` and ACL users without ``client|setname`` refuse
it, and the name only helps an operator reading ``CLIENT LIST``: so it is asked for after the
handshake and a refusal is ignored.
"""

from __future__ import annotations

import functools

import redis

CLIENT_NAME = "queuewatch"


def name_when_allowed(connection: redis.connection.AbstractConnection) -> None:
    """Ask Redis to name this freshly connected ``connection``; a refusal is ignored."""
    try:
        connection.send_command("CLIENT", "SETNAME", CLIENT_NAME, check_health=False)
        connection.read_response()
    except redis.ResponseError:
        pass


class _NamedWhenAllowed:
    def on_connect_check_health(self, check_health: bool = True) -> None:
        super().on_connect_check_health(check_health)  # type: ignore[misc]
        name_when_allowed(self)  # type: ignore[arg-type]


@functools.cache
def _named(connection_class: type) -> type:
    return type(connection_class.__name__, (_NamedWhenAllowed, connection_class), {})


def name_connections_when_allowed(client: redis.Redis) -> redis.Redis:
    """``client`` with each new connection named ``queuewatch`` if Redis allows it (to call
    before the client has connected)."""
    pool = client.connection_pool
    pool.connection_class = _named(pool.connection_class)
    return client
