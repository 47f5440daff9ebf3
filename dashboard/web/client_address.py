"""The address a request comes from, for counting failed logins per address (django-axes calls
``client_address``: ``AXES_CLIENT_IP_CALLABLE``).

Without ``QUEUEWATCH_TRUSTED_PROXIES`` it is the connecting address (``REMOTE_ADDR``) and
``X-Forwarded-For`` is ignored: any client can write that header, and would pose as as many
addresses as it likes. Behind a reverse proxy every request connects from the proxy, so one
client's failures locked everyone out; listing the proxy's networks there makes the address the
right-most ``X-Forwarded-For`` hop that is not a trusted proxy: each proxy appends the address
that connected to it, so hops right of that one were written by proxies we trust, and anything
left of it by the client (ignored).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def _parsed(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address, networks) -> bool:
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address.version == net.version and address in net for net in networks)


def comes_from(request, networks) -> bool:
    """Whether the request's client (``client_address``: through trusted proxies) is in one of
    ``networks`` (an IPv4-mapped IPv6 address matches its IPv4 network)."""
    address = _parsed(client_address(request))
    return address is not None and _trusted(address, networks)


def client_address(request) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    networks = settings.QUEUEWATCH_TRUSTED_PROXIES
    connected = _parsed(remote)
    if not networks or connected is None or not _trusted(connected, networks):
        return remote
    hops = [hop for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _parsed(hop)
        if address is None:  # not an address a proxy of ours wrote: stop trusting here
            break
        if not _trusted(address, networks):
            return str(address)
    # Every hop a trusted proxy (or none given): the nearest one we can name.
    return remote
